// SPDX-License-Identifier: Apache-2.0
#include "core/host/psi.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace tailcause::core {
namespace {

constexpr size_t kMaxFields = 16;  // the kernel prints four
constexpr size_t kMaxKey = 16;     // "avg300"
constexpr size_t kMaxValue = 24;   // a 20-digit total, "100.00"
constexpr std::string_view kBlank = " \t";

bool is_key_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

std::optional<uint64_t> parse_total(std::string_view s) {
  if (s.empty() || s.size() > kMaxValue) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "0.72": digits, optionally a point and digits (what the kernel's "%lu.%02lu" prints), in
// [0, 100]. Checked by hand first: from_chars alone would take "inf", "nan", "1e2" and "-0".
std::optional<double> parse_average(std::string_view s) {
  if (s.empty() || s.size() > kMaxValue) return std::nullopt;
  size_t points = 0;
  for (char c : s) {
    if (c == '.') {
      points++;
    } else if (c < '0' || c > '9') {
      return std::nullopt;
    }
  }
  if (points > 1 || s.front() == '.' || s.back() == '.') return std::nullopt;
  double v = 0;
  const auto [end, ec] =
      std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > 100) {
    return std::nullopt;
  }
  return v;
}

// "avg10=0.72 avg60=0.13 avg300=0.02 total=192769" (after the line's "some"/"full").
std::optional<PsiLine> parse_fields(std::string_view rest) {
  std::optional<uint64_t> total;
  std::optional<double> avg10;
  bool avg60 = false, avg300 = false;
  size_t fields = 0;
  while (true) {
    const auto first = rest.find_first_not_of(kBlank);
    if (first == std::string_view::npos) break;
    rest.remove_prefix(first);
    const auto gap = rest.find_first_of(kBlank);
    const std::string_view field = rest.substr(0, gap);
    rest = gap == std::string_view::npos ? std::string_view{} : rest.substr(gap);
    if (++fields > kMaxFields) return std::nullopt;

    const auto eq = field.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq > kMaxKey) return std::nullopt;
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    for (char c : key) {
      if (!is_key_char(c)) return std::nullopt;
    }
    if (value.empty() || value.size() > kMaxValue) return std::nullopt;
    if (key == "total") {
      if (total) return std::nullopt;
      total = parse_total(value);
      if (!total) return std::nullopt;
    } else if (key == "avg10" || key == "avg60" || key == "avg300") {
      const auto avg = parse_average(value);
      if (!avg) return std::nullopt;
      bool& seen = key == "avg60" ? avg60 : avg300;
      if (key == "avg10") {
        if (avg10) return std::nullopt;
        avg10 = avg;
      } else {
        if (seen) return std::nullopt;
        seen = true;
      }
    }
    // Other keys: a later kernel's; skipped.
  }
  if (!total || !avg10) return std::nullopt;
  return PsiLine{*total, *avg10};
}

}  // namespace

std::optional<Psi> parse_psi(std::string_view text) {
  if (text.size() > kMaxPsiText) return std::nullopt;
  std::optional<PsiLine> some, full;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);

    const auto first = line.find_first_not_of(kBlank);
    if (first == std::string_view::npos) continue;  // a blank line
    line.remove_prefix(first);
    const auto gap = line.find_first_of(kBlank);
    if (gap == std::string_view::npos) return std::nullopt;  // a word and nothing else
    const std::string_view kind = line.substr(0, gap);
    std::optional<PsiLine>* slot = kind == "some" ? &some : kind == "full" ? &full : nullptr;
    if (!slot || slot->has_value()) return std::nullopt;
    *slot = parse_fields(line.substr(gap));
    if (!slot->has_value()) return std::nullopt;
  }
  if (!some) return std::nullopt;
  return Psi{*some, full};
}

}  // namespace tailcause::core
