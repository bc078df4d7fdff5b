// SPDX-License-Identifier: Apache-2.0
#include "cli/validators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "cli/api_client.h"
#include "core/config/config.h"
#include "core/report/heatmap_render.h"
#include "export/api/params.h"
#include "core/config/duration.h"

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

CLI::Validator api_url() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_api_url(text);
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
        return "";
      },
      "URL");
}

CLI::Validator heatmap_metric() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool stage = text.rfind("stage:", 0) == 0;
        if (core::heatmap_api_path(text).empty() ||
            (stage && !exporter::api::valid_name(text.substr(6)))) {
          return fmt::format("{}: want stage:NAME, tcp_rtt, tcp_duration or layers", text);
        }
        return "";
      },
      "HEATMAP");
}

CLI::Validator file_suffix(const std::vector<std::string>& suffixes) {
  return CLI::Validator(
      [suffixes](std::string& text) -> std::string {
        for (const auto& s : suffixes) {
          if (text.size() > s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0)
            return "";
        }
        return fmt::format("{}: want a file ending in {}", text, fmt::join(suffixes, " or "));
      },
      "FILE");
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

CLI::Validator trace_id_prefix() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool hex = std::all_of(text.begin(), text.end(),
                                     [](unsigned char c) { return std::isxdigit(c) != 0; });
        if (!hex || text.size() < 8 || text.size() > 32)
          return fmt::format(
              "'{}' is not a trace id (8 to 32 hex digits: the whole id or a "
              "prefix of it)",
              text.size() > 64 ? text.substr(0, 64) + "..." : text);
        std::transform(text.begin(), text.end(), text.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return "";
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
