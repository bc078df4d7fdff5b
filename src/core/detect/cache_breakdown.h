// SPDX-License-Identifier: Apache-2.0
// Vector-cache breakdown per tenant and cache: over a sliding window, the share of lookups that
// missed or returned a stale result, with the P95/P99 age of the stale results. A (tenant,
// cache) enters breakdown when the window holds at least min_lookups lookups and that share
// reaches the configured ratio; it leaves when the share falls below 0.8 x ratio (hysteresis),
// or when its window has emptied. One Glitch per entry. Pure: no I/O.
//
// Competition index, per (tenant, cache) in [0, 1]: how much of the cache's churn this tenant
// causes. Each miss takes memory for the insert that follows it, so the index is the tenant's
// share of the cache's misses and stales in the window times its own miss ratio: a tenant
// flooding the cache with one-off queries is near 1, a tenant that mostly hits, or that has the
// cache to itself, is near 0. Tenants share a cache when they use the same cache name in the
// same process (a cache library's budget is per process): each series is placed by the process
// of its latest lookup. libtailcause_cache shrinks the quota of a high one (down to 20%
// of its base) and lets a low one (< 0.3) grow, so the flood cannot push the others out.
//
// Stale age: only the ages of results returned stale are kept (what "stale-age" measures: how
// out of date the answers served were); hit ages are exported elsewhere as a histogram.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/detect/glitch_detector.h"
#include "core/record/stage_record.h"
#include "core/aggregate/streaming_quantile.h"

namespace tailcause::core {

struct CacheBreakdownStatus {
  std::string tenant, cache;
  uint64_t lookups = 0, hits = 0, misses = 0, stales = 0;  // in the window
  double ratio = 0;  // (misses + stales) / lookups; 0 when there were none
  bool in_breakdown = false;
  uint64_t stale_age_p95_ns = 0, stale_age_p99_ns = 0;  // 0 without stale results
  uint64_t breakdowns = 0;                              // times it entered breakdown (monotonic)
  double competition = 0;                               // see above
  uint32_t pid = 0;                                     // of the latest lookup
};

class CacheBreakdownDetector {
 public:
  static constexpr size_t kIntervals = 6;  // the window slides in steps of window_s / 6
  static constexpr size_t kMaxSeries = 4096;
  static constexpr double kExitFactor = 0.8;

  explicit CacheBreakdownDetector(const CacheBreakdownSettings& settings,
                                  size_t max_series = kMaxSeries);

  // Counts the lookup at its time_ns; a Glitch when its (tenant, cache) enters breakdown.
  std::optional<Glitch> observe(const CacheRecord& r);

  // Every (tenant, cache), its window as of `now_ns` (CLOCK_MONOTONIC); without an argument,
  // as of the latest lookup seen.
  std::vector<CacheBreakdownStatus> snapshot() const { return snapshot(latest_ns_); }
  std::vector<CacheBreakdownStatus> snapshot(uint64_t now_ns) const;
  // One (tenant, cache) as of `now_ns`; a series never seen has zero lookups.
  CacheBreakdownStatus status(const std::string& tenant, const std::string& cache,
                              uint64_t now_ns) const;

  size_t series() const { return series_.size(); }
  uint64_t untracked() const { return untracked_; }  // lookups refused for lack of room
  uint64_t window_ns() const { return interval_ns_ * kIntervals; }

 private:
  struct Bucket {
    uint64_t epoch = 0;  // interval number + 1; 0: never used
    uint64_t hits = 0, misses = 0, stales = 0;
  };
  struct Series {
    std::vector<Bucket> buckets = std::vector<Bucket>(kIntervals);
    // Created at the first stale result: ~17 KiB, so caches that never serve stale cost less.
    std::unique_ptr<StreamingQuantile> stale_ages;
    bool in_breakdown = false;
    uint64_t breakdowns = 0;
    uint64_t first_ns = 0;  // the first lookup: a cache warming up is not breaking down
    uint32_t pid = 0;       // of the latest lookup
  };
  struct Counts {
    uint64_t hits = 0, misses = 0, stales = 0;
    uint64_t lookups() const { return hits + misses + stales; }
    double ratio() const;
  };

  Series* series_for(const std::string& tenant, const std::string& cache);
  Counts counts(const Series& s, uint64_t now_ns) const;
  bool live(const Bucket& b, uint64_t now_ns) const;
  CacheBreakdownStatus status_of(const std::string& tenant, const std::string& cache,
                                 const Series& s, uint64_t now_ns) const;
  std::string evidence(const std::string& cache, const Counts& c, const Series& s,
                       uint64_t now_ns) const;

  CacheBreakdownSettings settings_;
  size_t max_series_;
  uint64_t interval_ns_;
  std::map<std::pair<std::string, std::string>, Series> series_;
  uint64_t untracked_ = 0;
  uint64_t latest_ns_ = 0;
};

}  // namespace tailcause::core
