// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/c_api.h"

#include <cstring>
#include <string>

#include "tailcause/cache/vector_cache.h"

using tailcause::cache::CacheOptions;
using tailcause::cache::VectorCache;

struct tc_cache {
  explicit tc_cache(CacheOptions o) : cache(std::move(o)) {}
  VectorCache cache;
};

namespace {

thread_local std::string last_error;

// Runs `f`, turning any exception into -1 and the thread's last error.
template <typename F>
int guarded(F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return -1;
}

std::string need(const char* s, const char* what) {
  if (!s) throw std::invalid_argument(std::string(what) + " is NULL");
  return s;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

const char* tc_cache_last_error(void) { return last_error.c_str(); }

tc_cache* tc_cache_new(const tc_cache_options* o) {
  tc_cache* out = nullptr;
  guarded([&] {
    if (!o) throw std::invalid_argument("options is NULL");
    CacheOptions opts;
    opts.dim = o->dim;
    if (o->name) opts.name = o->name;
    if (o->model_version) opts.model_version = o->model_version;
    opts.threshold = o->threshold;
    if (!(o->ttl_seconds > 0 && o->ttl_seconds < 1e9))
      throw std::invalid_argument("ttl_seconds must be positive");
    opts.ttl = std::chrono::nanoseconds(static_cast<int64_t>(o->ttl_seconds * 1e9));
    if (o->base_quota_bytes) opts.base_quota_bytes = o->base_quota_bytes;
    opts.budget_bytes = o->budget_bytes;
    opts.semantic = o->semantic != 0;
    opts.admission = o->admission != 0;
    opts.quotas = o->quotas != 0;
    out = new tc_cache(std::move(opts));
    return 0;
  });
  return out;
}

void tc_cache_free(tc_cache* c) { delete c; }

int tc_cache_lookup(tc_cache* c, const char* tenant, const float* vector, size_t dim,
                    uint64_t request_id, void* value, size_t value_cap, size_t* value_len,
                    uint64_t* age_ns, float* similarity) {
  return guarded([&] {
    if (!c || !vector) throw std::invalid_argument("cache or vector is NULL");
    auto r = c->cache.lookup(need(tenant, "tenant"), {vector, dim}, request_id);
    if (age_ns) *age_ns = r.age_ns;
    if (similarity) *similarity = r.similarity;
    if (value_len) *value_len = r.value ? r.value->size() : 0;
    if (r.value && value) std::memcpy(value, r.value->data(), std::min(value_cap, r.value->size()));
    return static_cast<int>(r.result);
  });
}

int tc_cache_insert(tc_cache* c, const char* tenant, const float* vector, size_t dim,
                    const void* value, size_t value_len) {
  return guarded([&] {
    if (!c || !vector || (!value && value_len)) throw std::invalid_argument("NULL argument");
    std::string v(static_cast<const char*>(value), value_len);
    return static_cast<int>(c->cache.insert(need(tenant, "tenant"), {vector, dim}, std::move(v)));
  });
}

int tc_cache_set_model_version(tc_cache* c, const char* version) {
  return guarded([&] {
    c->cache.set_model_version(need(version, "version"));
    return 0;
  });
}

int tc_cache_set_base_quota(tc_cache* c, const char* tenant, uint64_t bytes) {
  return guarded([&] {
    c->cache.set_base_quota(need(tenant, "tenant"), bytes);
    return 0;
  });
}

int tc_cache_set_competition(tc_cache* c, const char* tenant, double competition) {
  return guarded([&] {
    c->cache.set_competition(need(tenant, "tenant"), competition);
    return 0;
  });
}

int tc_cache_rebalance(tc_cache* c) {
  return guarded([&] {
    c->cache.rebalance();
    return 0;
  });
}

int tc_cache_tenant_stats_get(tc_cache* c, const char* tenant, tc_cache_tenant_stats* out) {
  return guarded([&] {
    if (!out) throw std::invalid_argument("out is NULL");
    auto s = c->cache.stats(need(tenant, "tenant"));
    *out = {
        s.base_quota_bytes, s.quota_bytes, s.usage_bytes,    s.entries,   s.competition, s.hits,
        s.semantic_hits,    s.misses,      s.stale,          s.stored,    s.rejected,    s.evicted,
        s.invalidated,      s.warmups,     s.warmed_entries, s.rebalances};
    return 0;
  });
}

#pragma GCC visibility pop
}  // extern "C"
