// SPDX-License-Identifier: Apache-2.0
#include "retrieval_cache.h"

namespace rag {

RetrievalCache::Lookup RetrievalCache::lookup(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return {TAILCAUSE_CACHE_MISS, 0, std::nullopt};
  lru_.splice(lru_.begin(), lru_, it->second);
  auto age = Clock::now() - it->second->stored;
  auto age_ns =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(age).count());
  if (age > ttl_) return {TAILCAUSE_CACHE_STALE, age_ns, std::nullopt};
  return {TAILCAUSE_CACHE_HIT, age_ns, it->second->value};
}

void RetrievalCache::store(uint64_t key, std::vector<Neighbour> value) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->stored = Clock::now();
    it->second->value = std::move(value);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(Entry{key, Clock::now(), std::move(value)});
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

}  // namespace rag
