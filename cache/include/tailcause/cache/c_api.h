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
/* The tenants' names, each followed by a NUL, in buf (up to cap bytes); returns the bytes all of
 * them need (call again with a larger buffer when that exceeds cap). */
int64_t tc_cache_tenants(tc_cache* cache, char* buf, size_t cap);

/* Warm-up: the loader gets a batch of `n` vectors (row-major, n x dim floats) of `tenant` and
 * gives the value of vector i with tc_cache_load_put(load, i, ...) before it returns (a vector
 * without one is skipped). It runs on the thread that called tc_cache_warm_up. NULL: none. */
typedef struct tc_cache_load tc_cache_load;
typedef void (*tc_cache_loader_fn)(void* user, tc_cache_load* load, const char* tenant,
                                   const float* vectors, size_t n, size_t dim);
int tc_cache_set_loader(tc_cache* cache, tc_cache_loader_fn loader, void* user);
int tc_cache_load_put(tc_cache_load* load, size_t i, const void* value, size_t value_len);
/* Warms `tenant` up from its recorded patterns now; returns the entries loaded. */
int64_t tc_cache_warm_up(tc_cache* cache, const char* tenant);

/* The closed loop (tailcause/cache/feedback.h) with verdicts the caller brings: one round warms
 * up tenants whose breakdown began and applies the competition indexes. */
typedef struct tc_cache_feedback tc_cache_feedback;
typedef struct tc_cache_verdict {
  const char* tenant;
  int answered; /* 0: no daemon answered for this tenant */
  int breakdown;
  double competition, miss_ratio;
  uint64_t lookups;
} tc_cache_verdict;
typedef struct tc_cache_feedback_stats {
  uint64_t polls, unanswered, breakdowns, warmups, warmed_entries, rebalances;
} tc_cache_feedback_stats;
tc_cache_feedback* tc_cache_feedback_new(tc_cache* cache); /* NULL on an error */
int tc_cache_feedback_follow(tc_cache_feedback* feedback, const tc_cache_verdict* verdicts,
                             size_t n);
int tc_cache_feedback_stats_get(tc_cache_feedback* feedback, tc_cache_feedback_stats* out);
void tc_cache_feedback_free(tc_cache_feedback* feedback); /* before its cache's tc_cache_free */

#ifdef __cplusplus
}
#endif

#endif /* TAILCAUSE_CACHE_C_API_H */
