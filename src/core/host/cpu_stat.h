// SPDX-License-Identifier: Apache-2.0
// Parsing of the cgroup CPU files that describe CFS bandwidth control (throttling): cpu.stat,
// cpu.max / cpu.cfs_quota_us + cpu.cfs_period_us, cpu.weight / cpu.shares. Pure functions over
// the files' text, no I/O: the throttle probe reads the files and hands their contents here.
//
// Every parser returns nullopt rather than a guess when the text is not what the kernel
// writes, so a half-read or foreign file never shows up as a counter that went back to zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

// The bandwidth counters of one cgroup, in nanoseconds and periods.
struct CpuBandwidthStats {
  uint64_t nr_periods = 0;    // enforcement periods in which the cgroup had runnable tasks
  uint64_t nr_throttled = 0;  // of those, periods in which it ran out of quota
  uint64_t throttled_ns = 0;  // total time its runnable tasks spent throttled
  uint64_t usage_ns = 0;      // CPU time used (v2 usage_usec; 0 where cpu.stat lacks it, v1)

  CpuBandwidthStats& operator+=(const CpuBandwidthStats& o) {
    nr_periods += o.nr_periods;
    nr_throttled += o.nr_throttled;
    throttled_ns += o.throttled_ns;
    usage_ns += o.usage_ns;
    return *this;
  }
  bool operator==(const CpuBandwidthStats&) const = default;
};

// cpu.stat of either version: v2 keys nr_periods, nr_throttled, throttled_usec (usage_usec
// optional); v1 keys nr_periods, nr_throttled, throttled_time (ns). Unknown keys and lines that
// are not "key <integer>" are skipped. nullopt unless all three bandwidth keys were found
// (a v2 cgroup without the cpu controller only reports usage, which is not bandwidth data).
// nr_periods/nr_throttled are 32-bit ints the kernel prints with %d: a negative value is the
// wrapped unsigned count and is read back as such.
std::optional<CpuBandwidthStats> parse_cpu_stat(std::string_view text);

// A bandwidth limit: `quota_us` of CPU time per `period_us`; no quota means unlimited.
struct CpuLimit {
  std::optional<uint64_t> quota_us;
  uint64_t period_us = 0;
  bool operator==(const CpuLimit&) const = default;
};

// v2 cpu.max: "max 100000" (unlimited) or "10000 100000". nullopt when malformed.
std::optional<CpuLimit> parse_cpu_max(std::string_view text);

// v1 cpu.cfs_quota_us ("-1" = unlimited, else microseconds) and cpu.cfs_period_us.
// nullopt when either is malformed or the period is zero.
std::optional<CpuLimit> parse_cfs_limit(std::string_view quota_us_text,
                                        std::string_view period_us_text);

// v2 cpu.weight: an integer in [1, 10000]; nullopt otherwise.
std::optional<uint64_t> parse_cpu_weight(std::string_view text);

// v1 cpu.shares converted to the v2 weight scale, so both versions export comparable numbers.
// nullopt when malformed.
std::optional<uint64_t> parse_cpu_shares_as_weight(std::string_view text);

// The kernel's own shares -> weight conversion (what cpu.weight reads on the same task group,
// kernel/sched: DIV_ROUND_CLOSEST(shares * 100, 1024)), clamped to [1, 10000]: the default
// 1024 shares is the default weight 100.
uint64_t weight_from_shares(uint64_t shares);

// Keeps one cgroup's counters monotonic across reads. The kernel's period counters are 32-bit
// and wrap; a cgroup removed and re-created under the same name between two reads restarts
// from zero (seen as a new kernfs id). Both would look like a counter reset; this carries the
// earlier values forward instead.
class CpuStatContinuity {
 public:
  // Feeds a reading of the cgroup whose directory has kernfs id `id`; returns the totals.
  CpuBandwidthStats update(uint64_t id, const CpuBandwidthStats& raw);

 private:
  bool seen_ = false;
  uint64_t id_ = 0;
  CpuBandwidthStats last_raw_;
  CpuBandwidthStats carried_;  // added to every raw reading
};

}  // namespace tailcause::core
