// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/c_api.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "tailcause/cache/feedback.h"
#include "tailcause/cache/vector_cache.h"

using tailcause::cache::CacheOptions;
using tailcause::cache::VectorCache;

struct tc_cache {
  explicit tc_cache(CacheOptions o) : cache(std::move(o)) {}
  VectorCache cache;
};

struct tc_cache_load {
  std::vector<std::optional<std::string>> values;
};

struct tc_cache_feedback {
  explicit tc_cache_feedback(VectorCache& c) : loop(c) {}
  tailcause::cache::CacheFeedback loop;
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

int64_t tc_cache_tenants(tc_cache* c, char* buf, size_t cap) {
  int64_t need_bytes = -1;
  guarded([&] {
    if (!c || (!buf && cap)) throw std::invalid_argument("NULL argument");
    std::string all;
    for (const auto& t : c->cache.tenants()) {
      all += t;
      all += '\0';
    }
    if (all.size() <= cap) std::memcpy(buf, all.data(), all.size());
    need_bytes = static_cast<int64_t>(all.size());
    return 0;
  });
  return need_bytes;
}

int tc_cache_set_loader(tc_cache* c, tc_cache_loader_fn loader, void* user) {
  return guarded([&] {
    if (!c) throw std::invalid_argument("cache is NULL");
    if (!loader) {
      c->cache.set_loader({});
      return 0;
    }
    const std::size_t dim = c->cache.options().dim;
    c->cache.set_loader([loader, user, dim](const std::string& tenant,
                                            const std::vector<std::vector<float>>& vectors) {
      std::vector<float> rows;
      rows.reserve(vectors.size() * dim);
      for (const auto& v : vectors) rows.insert(rows.end(), v.begin(), v.end());
      tc_cache_load load{std::vector<std::optional<std::string>>(vectors.size())};
      loader(user, &load, tenant.c_str(), rows.data(), vectors.size(), dim);
      return std::move(load.values);
    });
    return 0;
  });
}

int tc_cache_load_put(tc_cache_load* load, size_t i, const void* value, size_t value_len) {
  return guarded([&] {
    if (!load || (!value && value_len)) throw std::invalid_argument("NULL argument");
    if (i >= load->values.size())
      throw std::invalid_argument("vector " + std::to_string(i) + " is not in this batch of " +
                                  std::to_string(load->values.size()));
    load->values[i].emplace(static_cast<const char*>(value), value_len);
    return 0;
  });
}

int64_t tc_cache_warm_up(tc_cache* c, const char* tenant) {
  int64_t loaded = -1;
  guarded([&] {
    if (!c) throw std::invalid_argument("cache is NULL");
    loaded = static_cast<int64_t>(c->cache.warm_up(need(tenant, "tenant")));
    return 0;
  });
  return loaded;
}

tc_cache_feedback* tc_cache_feedback_new(tc_cache* c) {
  tc_cache_feedback* out = nullptr;
  guarded([&] {
    if (!c) throw std::invalid_argument("cache is NULL");
    out = new tc_cache_feedback(c->cache);
    return 0;
  });
  return out;
}

int tc_cache_feedback_follow(tc_cache_feedback* f, const tc_cache_verdict* verdicts, size_t n) {
  return guarded([&] {
    if (!f || (!verdicts && n)) throw std::invalid_argument("NULL argument");
    std::vector<tailcause::cache::TenantVerdict> round;
    for (size_t i = 0; i < n; ++i) {
      const auto& v = verdicts[i];
      std::optional<tailcause::cache::DaemonVerdict> d;
      if (v.answered) d = {v.breakdown != 0, v.competition, v.miss_ratio, v.lookups};
      round.emplace_back(need(v.tenant, "tenant"), d);
    }
    f->loop.follow(round);
    return 0;
  });
}

int tc_cache_feedback_stats_get(tc_cache_feedback* f, tc_cache_feedback_stats* out) {
  return guarded([&] {
    if (!f || !out) throw std::invalid_argument("NULL argument");
    const auto s = f->loop.stats();
    *out = {s.polls, s.unanswered, s.breakdowns, s.warmups, s.warmed_entries, s.rebalances};
    return 0;
  });
}

void tc_cache_feedback_free(tc_cache_feedback* f) { delete f; }

#pragma GCC visibility pop
}  // extern "C"
