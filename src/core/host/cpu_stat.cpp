// SPDX-License-Identifier: Apache-2.0
#include "core/host/cpu_stat.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace tailcause::core {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// The whole of `s` (after trimming) as an integer of type T, or nullopt.
template <typename T>
std::optional<T> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// A counter the kernel keeps as `int` and prints with %d: past 2^31 it shows as negative.
std::optional<uint64_t> parse_int32_counter(std::string_view s) {
  const auto v = parse_int<int64_t>(s);
  if (!v || *v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return *v < 0 ? static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(*v)))
                : static_cast<uint64_t>(*v);
}

// Splits "key value" (any run of blanks between, nothing else on the line).
bool split_key_value(std::string_view line, std::string_view& key, std::string_view& value) {
  line = trim(line);
  const auto gap = line.find_first_of(kSpace);
  if (gap == std::string_view::npos) return false;
  key = line.substr(0, gap);
  value = trim(line.substr(gap));
  return !key.empty() && !value.empty() && value.find_first_of(kSpace) == std::string_view::npos;
}

constexpr uint64_t kNsPerUs = 1000;

}  // namespace

std::optional<CpuBandwidthStats> parse_cpu_stat(std::string_view text) {
  std::optional<uint64_t> periods, throttled, throttled_ns, usage_ns;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);

    std::string_view key, value;
    if (!split_key_value(line, key, value)) continue;
    if (key == "nr_periods") {
      if (auto v = parse_int32_counter(value)) periods = v;
    } else if (key == "nr_throttled") {
      if (auto v = parse_int32_counter(value)) throttled = v;
    } else if (key == "throttled_usec") {  // v2
      if (auto v = parse_int<uint64_t>(value)) throttled_ns = *v * kNsPerUs;
    } else if (key == "throttled_time") {  // v1, already nanoseconds
      if (auto v = parse_int<uint64_t>(value)) throttled_ns = v;
    } else if (key == "usage_usec") {
      if (auto v = parse_int<uint64_t>(value)) usage_ns = *v * kNsPerUs;
    }
  }
  if (!periods || !throttled || !throttled_ns) return std::nullopt;
  return CpuBandwidthStats{*periods, *throttled, *throttled_ns, usage_ns.value_or(0)};
}

std::optional<CpuLimit> parse_cpu_max(std::string_view text) {
  std::string_view quota, period;
  if (!split_key_value(text, quota, period)) return std::nullopt;
  const auto period_us = parse_int<uint64_t>(period);
  if (!period_us || *period_us == 0) return std::nullopt;
  if (quota == "max") return CpuLimit{std::nullopt, *period_us};
  const auto quota_us = parse_int<uint64_t>(quota);
  if (!quota_us) return std::nullopt;
  return CpuLimit{*quota_us, *period_us};
}

std::optional<CpuLimit> parse_cfs_limit(std::string_view quota_us_text,
                                        std::string_view period_us_text) {
  const auto quota = parse_int<int64_t>(quota_us_text);
  const auto period = parse_int<uint64_t>(period_us_text);
  if (!quota || !period || *period == 0) return std::nullopt;
  if (*quota == -1) return CpuLimit{std::nullopt, *period};
  if (*quota < 0) return std::nullopt;  // only -1 means "unlimited"
  return CpuLimit{static_cast<uint64_t>(*quota), *period};
}

std::optional<uint64_t> parse_cpu_weight(std::string_view text) {
  const auto w = parse_int<uint64_t>(text);
  if (!w || *w < 1 || *w > 10000) return std::nullopt;
  return w;
}

uint64_t weight_from_shares(uint64_t shares) {
  // Same rounding as the kernel; shares above 2^57 cannot come from the kernel (max 2^18).
  shares = std::min<uint64_t>(shares, uint64_t{1} << 40);
  const uint64_t weight = (shares * 100 + 512) / 1024;
  return std::clamp<uint64_t>(weight, 1, 10000);
}

std::optional<uint64_t> parse_cpu_shares_as_weight(std::string_view text) {
  const auto shares = parse_int<uint64_t>(text);
  if (!shares) return std::nullopt;
  return weight_from_shares(*shares);
}

CpuBandwidthStats CpuStatContinuity::update(uint64_t id, const CpuBandwidthStats& raw) {
  if (!seen_) {
    seen_ = true;
  } else if (id != id_) {
    carried_ += last_raw_;  // a new cgroup under the old name: keep what the old one counted
  } else {
    // 32-bit kernel counters wrap; the 64-bit ones never go down in one cgroup's life, so a
    // drop there can only be a restart we could not see: carry the old value.
    constexpr uint64_t kWrap32 = uint64_t{1} << 32;
    if (raw.nr_periods < last_raw_.nr_periods) carried_.nr_periods += kWrap32;
    if (raw.nr_throttled < last_raw_.nr_throttled) carried_.nr_throttled += kWrap32;
    if (raw.throttled_ns < last_raw_.throttled_ns) carried_.throttled_ns += last_raw_.throttled_ns;
    if (raw.usage_ns < last_raw_.usage_ns) carried_.usage_ns += last_raw_.usage_ns;
  }
  id_ = id;
  last_raw_ = raw;
  CpuBandwidthStats total = carried_;
  total += raw;
  return total;
}

}  // namespace tailcause::core
