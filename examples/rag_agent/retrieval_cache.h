// SPDX-License-Identifier: Apache-2.0
// The tenant's retrieval cache, on the tailcause vector cache library (cache/): looked up by
// the query vector (an exact key from the model version and the quantised vector, or a stored
// query at cosine >= 0.99), LRU with TinyLFU admission in a quota of about `capacity` entries.
// Entries older than the TTL are "stale": reported as such and refreshed. The library fires
// the SDK's cache_lookup probe itself (cache "retrieval").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <tailcause/cache/vector_cache.h>
#include <tailcause/sdk.h>

#include "vector_index.h"

namespace rag {

// The agent's cache: about 128 entries, stale after 4 minutes (under the 300 s at which the
// shipped TailcauseVectorCacheStale alert calls the hits too old). At start the agent loads its 96
// most asked questions (85% of what a tenant asks, Zipf 1.0 over 240), as a service restores its
// hot set: an empty cache misses on most lookups for its first 40 requests or so (compulsory
// misses, not a breakdown).
inline constexpr std::size_t kRetrievalCacheEntries = 128;
inline constexpr std::chrono::seconds kRetrievalCacheTtl{240};
inline constexpr std::size_t kPreloadedQuestions = 96;

// The library's options for it; public so that bench/cache/agent_cache_bench.cpp starts from
// exactly what the agent runs.
tailcause::cache::CacheOptions retrieval_cache_options(std::size_t dim, std::size_t capacity,
                                                       std::chrono::nanoseconds ttl,
                                                       std::size_t top_k);

class RetrievalCache {
 public:
  RetrievalCache(std::string tenant, std::size_t dim, std::size_t capacity,
                 std::chrono::nanoseconds ttl, std::size_t top_k);

  struct Lookup {
    tailcause_cache_result result;
    uint64_t age_ns = 0;                          // of the entry found (0 on a miss)
    std::optional<std::vector<Neighbour>> value;  // only on a hit
  };
  Lookup lookup(std::span<const float> query, uint64_t request_id);
  void store(std::span<const float> query, const std::vector<Neighbour>& value);
  // A retrieval's neighbours as the cache stores them (also what a warm-up loader returns).
  static std::string encode(const std::vector<Neighbour>& value);
  tailcause::cache::VectorCache& library() { return cache_; }

 private:
  std::string tenant_;
  tailcause::cache::VectorCache cache_;
};

}  // namespace rag
