// SPDX-License-Identifier: Apache-2.0
// The cache's USDT probes. Lookups fire the SDK's own tailcause:cache_lookup (so the daemon's
// cache metrics and breakdown detector work unchanged); actions (warm-up, rebalance,
// invalidation, admission rejects) fire tailcause:cache_action(tenant, cache, action, count).
#pragma once

#include <cstdint>

namespace tailcause::cache {

enum class CacheAction : int64_t {
  WarmUp = 0,      // count: entries loaded by one warm-up batch
  Rebalance = 1,   // count: the tenant's new quota in bytes
  Invalidate = 2,  // count: entries dropped by a model version change
  Reject = 3,      // count: 1, an insert the admission policy refused
  Evict = 4,       // count: entries evicted to fit a quota
};
const char* action_name(CacheAction a);

void probe_lookup(uint64_t request_id, const char* cache, int64_t result, uint64_t age_ns,
                  uint64_t key);
void probe_action(const char* tenant, const char* cache, CacheAction action, uint64_t count);

}  // namespace tailcause::cache
