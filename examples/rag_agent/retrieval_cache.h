// SPDX-License-Identifier: Apache-2.0
// A small per-tenant LRU cache in front of retrieval, keyed by the hash of the normalised
// question. Entries older than the TTL are "stale": reported as such and refreshed.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <tailcause/sdk.h>

#include "vector_index.h"

namespace rag {

class RetrievalCache {
 public:
  using Clock = std::chrono::steady_clock;
  RetrievalCache(std::size_t capacity, Clock::duration ttl) : capacity_(capacity), ttl_(ttl) {}

  struct Lookup {
    tailcause_cache_result result;
    uint64_t age_ns = 0;                          // of the entry found (0 on a miss)
    std::optional<std::vector<Neighbour>> value;  // only on a hit
  };
  Lookup lookup(uint64_t key);
  void store(uint64_t key, std::vector<Neighbour> value);

 private:
  struct Entry {
    uint64_t key;
    Clock::time_point stored;
    std::vector<Neighbour> value;
  };
  std::mutex mu_;
  std::size_t capacity_;
  Clock::duration ttl_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
};

}  // namespace rag
