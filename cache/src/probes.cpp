// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/probes.h"

#include <tailcause/sdk.h>

// The action probe's semaphore, like the SDK's own (sdk.h): set by the kernel while traced.
TAILCAUSE_SEMAPHORE(cache_action);

namespace tailcause::cache {

const char* action_name(CacheAction a) {
  switch (a) {
    case CacheAction::WarmUp: return "warmup";
    case CacheAction::Rebalance: return "rebalance";
    case CacheAction::Invalidate: return "invalidate";
    case CacheAction::Reject: return "reject";
    case CacheAction::Evict: return "evict";
  }
  return "unknown";
}

void probe_lookup(uint64_t request_id, const char* cache, int64_t result, uint64_t age_ns,
                  uint64_t key) {
  tailcause_cache_lookup(request_id, cache, result, age_ns, key);
}

void probe_action(const char* tenant, const char* cache, CacheAction action, uint64_t count) {
  if (TAILCAUSE_ENABLED(cache_action)) {
    tailcause_touch_string(tenant, TAILCAUSE_MAX_TENANT);
    tailcause_touch_string(cache, TAILCAUSE_MAX_NAME);
    int64_t a = static_cast<int64_t>(action);
    STAP_PROBE4(tailcause, cache_action, tenant, cache, a, count);
  }
}

}  // namespace tailcause::cache
