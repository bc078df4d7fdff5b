// SPDX-License-Identifier: Apache-2.0
#include "core/host/proc_self.h"

#include <charconv>

namespace tailcause::core {
namespace {

std::optional<uint64_t> number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The next space-separated word of `s`, consumed.
std::string_view next_word(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const size_t end = s.find(' ');
  const std::string_view w = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return w;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (text.find('(') == std::string_view::npos || close == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
  // Field 3 (state) is the first after comm.
  ProcStat s;
  for (int field = 3; field <= 24; ++field) {
    const std::string_view w = next_word(rest);
    if (w.empty()) return std::nullopt;
    if (field == 3) continue;  // state, a letter
    std::optional<uint64_t> v;
    if (field == 14 || field == 15 || field == 22 || field == 23 || field == 24) {
      v = number(w);
      if (!v) return std::nullopt;
    }
    if (field == 14) s.utime_ticks = *v;
    if (field == 15) s.stime_ticks = *v;
    if (field == 22) s.starttime_ticks = *v;
    if (field == 23) s.vsize_bytes = *v;
    if (field == 24) s.rss_pages = *v;
  }
  return s;
}

std::optional<uint64_t> parse_max_open_files(std::string_view text) {
  constexpr std::string_view kKey = "Max open files";
  for (size_t pos = 0; pos < text.size();) {
    const size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    return number(next_word(line));  // "unlimited" is not a number: nullopt
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_boot_time(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (!line.starts_with("btime ")) continue;
    line.remove_prefix(6);
    return number(next_word(line));
  }
  return std::nullopt;
}

}  // namespace tailcause::core
