// SPDX-License-Identifier: Apache-2.0
#include "cli/validators.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>

#include "core/config.h"
#include "core/duration.h"

namespace tailcause::cli {

CLI::Validator duration_within(uint64_t min_ns, uint64_t max_ns, const std::string& range) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        uint64_t ns = 0;
        try {
          ns = core::parse_duration_ns(text);
        } catch (const core::DurationError& e) {
          return e.what();
        }
        if (ns < min_ns || ns > max_ns) return fmt::format("must be {}, got {}", range, text);
        return "";
      },
      "DURATION");
}

CLI::Validator listen_address() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          core::parse_listen(text);
        } catch (const core::ConfigError& e) {
          return e.what();
        }
        return "";
      },
      "HOST:PORT");
}

CLI::Validator executable_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0)
          return "";
        return fmt::format("{}: not an executable file", path);
      },
      "EXECUTABLE");
}

CLI::Validator non_empty(const std::string& what, const std::string& hint) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        return text.empty() ? fmt::format("empty {} ({})", what, hint) : "";
      },
      "");
}

CLI::Validator integer_within(int64_t lo, int64_t hi, const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size() && v >= lo && v <= hi) return "";
        return fmt::format("{} must be in {}..{}, got {}", what, lo, hi, text);
      },
      fmt::format("INT in [{}..{}]", lo, hi));
}

}  // namespace tailcause::cli
