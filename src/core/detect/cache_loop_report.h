// SPDX-License-Identifier: Apache-2.0
// What a cache library did to each (tenant, cache) during a collection, from its cache_action
// probe: the warm-ups and quota rebalances that libtailcause_cache's feedback loop (or its own
// maintenance) ran, and the tenant's hit rate from the cache_lookup probe before the first of
// them and after it, for `tailcause diagnose`. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/record/stage_record.h"

namespace tailcause::core {

struct CacheLoopSummary {
  std::string tenant, cache;
  uint64_t warmups = 0, warmed_entries = 0, rebalances = 0;
  std::optional<uint64_t> quota_bytes;            // set by the last rebalance
  uint64_t first_action_ns = 0;                   // CLOCK_MONOTONIC
  uint64_t lookups_before = 0, hits_before = 0;   // before the first warm-up or rebalance
  uint64_t lookups_after = 0, hits_after = 0;     // since
  std::optional<double> hit_rate_before() const;  // none without lookups
  std::optional<double> hit_rate_after() const;
};

class CacheLoopTracker {
 public:
  static constexpr size_t kMaxSeries = 4096;
  explicit CacheLoopTracker(size_t max_series = kMaxSeries) : max_series_(max_series) {}

  void observe(const CacheRecord& r);
  void observe(const CacheActionRecord& r);

  // The (tenant, cache) pairs with at least one warm-up or rebalance, by tenant then cache.
  std::vector<CacheLoopSummary> summary() const;
  uint64_t untracked() const { return untracked_; }  // records refused for lack of room

 private:
  CacheLoopSummary* series_for(const std::string& tenant, const std::string& cache);

  size_t max_series_;
  std::map<std::pair<std::string, std::string>, CacheLoopSummary> series_;
  uint64_t untracked_ = 0;
};

}  // namespace tailcause::core
