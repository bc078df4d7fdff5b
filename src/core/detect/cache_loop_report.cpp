// SPDX-License-Identifier: Apache-2.0
#include "core/detect/cache_loop_report.h"

#include "core/aggregate/bounded_map.h"

namespace tailcause::core {

namespace {
constexpr int kHit = 0;
constexpr int kWarmUp = 0;

std::optional<double> rate(uint64_t hits, uint64_t lookups) {
  if (lookups == 0) return std::nullopt;
  return static_cast<double>(hits) / static_cast<double>(lookups);
}
}  // namespace

std::optional<double> CacheLoopSummary::hit_rate_before() const {
  return rate(hits_before, lookups_before);
}
std::optional<double> CacheLoopSummary::hit_rate_after() const {
  return rate(hits_after, lookups_after);
}

CacheLoopSummary* CacheLoopTracker::series_for(const std::string& tenant,
                                               const std::string& cache) {
  return bounded_slot(series_, {tenant, cache}, max_series_, untracked_, [&] {
    CacheLoopSummary s;
    s.tenant = tenant;
    s.cache = cache;
    return s;
  });
}

void CacheLoopTracker::observe(const CacheRecord& r) {
  CacheLoopSummary* s = series_for(r.id.tenant, r.cache);
  if (s == nullptr) return;
  // A lookup is "after" once an action was seen, whatever its time: the ring buffer delivers
  // a thread's records in order, and lookups race actions only at the edge.
  const bool after = s->first_action_ns != 0;
  (after ? s->lookups_after : s->lookups_before)++;
  if (r.result == kHit) (after ? s->hits_after : s->hits_before)++;
}

void CacheLoopTracker::observe(const CacheActionRecord& r) {
  if (r.action != kWarmUp && r.action != kCacheActionRebalance) return;  // routine, not the loop
  CacheLoopSummary* s = series_for(r.tenant, r.cache);
  if (s == nullptr) return;
  if (s->first_action_ns == 0) s->first_action_ns = r.time_ns ? r.time_ns : 1;
  if (r.action == kWarmUp) {
    s->warmups++;
    s->warmed_entries += r.count;
  } else {
    s->rebalances++;
    s->quota_bytes = r.count;
  }
}

std::vector<CacheLoopSummary> CacheLoopTracker::summary() const {
  std::vector<CacheLoopSummary> out;
  for (const auto& [_, s] : series_) {
    if (s.first_action_ns != 0) out.push_back(s);
  }
  return out;
}

}  // namespace tailcause::core
