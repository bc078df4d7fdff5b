// SPDX-License-Identifier: Apache-2.0
/* A C ABI over the vector cache (libtailcause_cache.so), for the Python binding and other FFI
 * users. Every function returns a negative value on an error; tc_cache_last_error() then says
 * what was wrong (per thread). Results: 0 hit, 1 miss, 2 stale (enum tailcause_cache_result). */
#ifndef TAILCAUSE_CACHE_C_API_H
#define TAILCAUSE_CACHE_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_cache tc_cache;

typedef struct tc_cache_options {
  size_t dim;
  const char* name;          /* NULL: "retrieval" */
  const char* model_version; /* NULL: "v1" */
  float threshold;           /* cosine of a semantic hit */
  double ttl_seconds;
  uint64_t base_quota_bytes;
  uint64_t budget_bytes; /* 0: the sum of the bases */
  int semantic, admission, quotas;
} tc_cache_options;

typedef struct tc_cache_tenant_stats {
  uint64_t base_quota_bytes, quota_bytes, usage_bytes, entries;
  double competition;
  uint64_t hits, semantic_hits, misses, stale;
  uint64_t stored, rejected, evicted, invalidated;
  uint64_t warmups, warmed_entries, rebalances;
} tc_cache_tenant_stats;

const char* tc_cache_last_error(void);
tc_cache* tc_cache_new(const tc_cache_options* options); /* NULL on an error */
void tc_cache_free(tc_cache* cache);

/* On a hit, copies up to value_cap bytes of the value into value and sets *value_len to its
 * full length; *age_ns and *similarity describe the entry found (either may be NULL). */
int tc_cache_lookup(tc_cache* cache, const char* tenant, const float* vector, size_t dim,
                    uint64_t request_id, void* value, size_t value_cap, size_t* value_len,
                    uint64_t* age_ns, float* similarity);
/* 0 stored, 1 updated, 2 rejected by admission or quota. */
int tc_cache_insert(tc_cache* cache, const char* tenant, const float* vector, size_t dim,
                    const void* value, size_t value_len);
int tc_cache_set_model_version(tc_cache* cache, const char* version);
int tc_cache_set_base_quota(tc_cache* cache, const char* tenant, uint64_t bytes);
int tc_cache_set_competition(tc_cache* cache, const char* tenant, double competition);
int tc_cache_rebalance(tc_cache* cache);
int tc_cache_tenant_stats_get(tc_cache* cache, const char* tenant, tc_cache_tenant_stats* out);

#ifdef __cplusplus
}
#endif

#endif /* TAILCAUSE_CACHE_C_API_H */
