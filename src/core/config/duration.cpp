// SPDX-License-Identifier: Apache-2.0
#include "core/config/duration.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace tailcause::core {
namespace {

// Longest spellings first, so "ms" is not read as "m" followed by "s".
constexpr std::array<std::pair<std::string_view, uint64_t>, 7> kUnits = {{
    {"ns", 1},
    {"us", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
}};

constexpr const char* kExamples =
    "write e.g. 30s, 5m, 2h, 1d, 1h30m or 250ms (units: ns, us, ms, s, m, h, d)";

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw DurationError(fmt::format("invalid duration '{}': {}; {}", text, why, kExamples));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

uint64_t parse_duration_ns(std::string_view text) {
  if (text.empty()) reject(text, "empty");
  if (text.front() == '-') reject(text, "must not be negative");
  if (text.front() == '+') reject(text, "no sign allowed");
  uint64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!is_digit(text[i])) reject(text, fmt::format("expected a number at '{}'", text.substr(i)));
    uint64_t number = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
      if (number > (kMaxDurationNs - digit) / 10) reject(text, "too large");
      number = number * 10 + digit;
    }
    if (i < text.size() && (text[i] == '.' || text[i] == ','))
      reject(text, "whole numbers only (write 1500ms for 1.5s)");
    size_t unit_end = i;
    while (unit_end < text.size() && !is_digit(text[unit_end])) ++unit_end;
    const std::string_view unit = text.substr(i, unit_end - i);
    if (unit.empty()) reject(text, fmt::format("missing unit after {}", number));
    const auto* found =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
    if (found == kUnits.end()) reject(text, fmt::format("unknown unit '{}'", unit));
    if (number > kMaxDurationNs / found->second) reject(text, "too large");
    const uint64_t part = number * found->second;
    if (total > kMaxDurationNs - part) reject(text, "too large");
    total += part;
    i = unit_end;
  }
  return total;
}

}  // namespace tailcause::core
