// SPDX-License-Identifier: Apache-2.0
#include "retrieval_cache.h"

#include <cstring>

namespace rag {

tailcause::cache::CacheOptions retrieval_cache_options(std::size_t dim, std::size_t capacity,
                                                       std::chrono::nanoseconds ttl,
                                                       std::size_t top_k) {
  tailcause::cache::CacheOptions o;
  o.dim = dim;
  o.name = "retrieval";
  o.ttl = ttl;
  o.threshold = 0.99f;
  o.warmup = false;  // no background retrievals: the agent's stage timings stay its requests'
  o.base_quota_bytes = 1;
  o.base_quota_bytes =
      tailcause::cache::VectorCache(o).entry_bytes(top_k * sizeof(Neighbour)) * capacity;
  return o;
}

RetrievalCache::RetrievalCache(std::string tenant, std::size_t dim, std::size_t capacity,
                               std::chrono::nanoseconds ttl, std::size_t top_k)
    : tenant_(std::move(tenant)), cache_(retrieval_cache_options(dim, capacity, ttl, top_k)) {}

RetrievalCache::Lookup RetrievalCache::lookup(std::span<const float> query, uint64_t request_id) {
  auto r = cache_.lookup(tenant_, query, request_id);
  Lookup out{static_cast<tailcause_cache_result>(r.result), r.age_ns, std::nullopt};
  if (r.value) {
    std::vector<Neighbour> docs(r.value->size() / sizeof(Neighbour));
    std::memcpy(docs.data(), r.value->data(), docs.size() * sizeof(Neighbour));
    out.value = std::move(docs);
  }
  return out;
}

std::string RetrievalCache::encode(const std::vector<Neighbour>& value) {
  return std::string(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(Neighbour));
}

void RetrievalCache::store(std::span<const float> query, const std::vector<Neighbour>& value) {
  cache_.insert(tenant_, query, encode(value));
}

}  // namespace rag
