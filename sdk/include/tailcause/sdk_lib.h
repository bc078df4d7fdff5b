// SPDX-License-Identifier: MIT
/*
 * libtailcause_sdk.so: the probes of sdk.h as plain exported C functions, for FFI users
 * (the Python package, other languages). C and C++ programs can use sdk.h directly instead.
 * The probe sites, their USDT notes and semaphores live in the library, so a tracer attaches
 * to usdt:<path>/libtailcause_sdk.so:tailcause:<probe>. Arguments are those of sdk.h.
 */
#ifndef TAILCAUSE_SDK_LIB_H
#define TAILCAUSE_SDK_LIB_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void tailcause_sdk_request_begin(uint64_t request_id, const char *tenant, const char *agent,
				 const char *trace_id);
void tailcause_sdk_request_end(uint64_t request_id, int64_t status);
void tailcause_sdk_stage_begin(uint64_t request_id, int64_t stage, const char *name);
void tailcause_sdk_stage_end(uint64_t request_id, int64_t stage);
void tailcause_sdk_context_attach(uint64_t request_id);
void tailcause_sdk_context_detach(uint64_t request_id);
void tailcause_sdk_cache_lookup(uint64_t request_id, const char *cache, int64_t result,
				uint64_t age_ns, uint64_t key_hash);
void tailcause_sdk_token(uint64_t request_id, uint64_t index);
void tailcause_sdk_layer_begin(uint64_t layer, uint64_t batch_size);
void tailcause_sdk_layer_end(uint64_t layer, uint64_t batch_size);
void tailcause_sdk_output_quality(uint64_t request_id, uint64_t entropy_micro);

/* Bit n is set while a tracer is attached to probe n of the library (its semaphore is non-zero),
 * for callers that can skip costly argument preparation (an entropy over logits) otherwise. */
enum tailcause_sdk_probe {
	TAILCAUSE_SDK_PROBE_REQUEST_BEGIN = 0,
	TAILCAUSE_SDK_PROBE_REQUEST_END = 1,
	TAILCAUSE_SDK_PROBE_STAGE_BEGIN = 2,
	TAILCAUSE_SDK_PROBE_STAGE_END = 3,
	TAILCAUSE_SDK_PROBE_CONTEXT_ATTACH = 4,
	TAILCAUSE_SDK_PROBE_CONTEXT_DETACH = 5,
	TAILCAUSE_SDK_PROBE_CACHE_LOOKUP = 6,
	TAILCAUSE_SDK_PROBE_TOKEN = 7,
	TAILCAUSE_SDK_PROBE_LAYER_BEGIN = 8,
	TAILCAUSE_SDK_PROBE_LAYER_END = 9,
	TAILCAUSE_SDK_PROBE_OUTPUT_QUALITY = 10,
};
uint32_t tailcause_sdk_enabled_mask(void);

/* The semaphore of probe `probe` (enum tailcause_sdk_probe) in this library, NULL for an
 * unknown probe: FFI callers may read it directly to skip the call while it is zero. */
const volatile unsigned short *tailcause_sdk_semaphore(uint32_t probe);

/* "MAJOR.MINOR.PATCH" of the project that built the library. */
const char *tailcause_sdk_version(void);

/* ---- circuit breaker ----
 * The daemon keeps a circuit breaker per (tenant, agent): it opens after consecutive slow stages
 * (default 3 over 200 ms) and closes once no slow stage was seen for a quiet period. An agent
 * asks for its state to shed or slow its load:
 *
 *     uint32_t retry_ms;
 *     int state = tailcause_sdk_breaker_state("tenant-a", "rag-agent", &retry_ms);
 *     if (state == 1) ... open: shed load, retry in about retry_ms ms
 *     else if (state < 0) ... no answer (-state is an errno): carry on as if closed
 *
 * Returns 0 closed, 1 open (then *retry_after_ms, when not NULL, is the time in ms until the
 * breaker may close; a further slow stage extends it; 0 when closed), or a negative errno:
 * -ENOENT or -ECONNREFUSED when no daemon serves the socket, -EACCES when this process may not
 * use it (it is owner-only), -ETIMEDOUT when no reply came within 100 ms, -EBUSY or -EAGAIN when
 * the daemon has too many clients, -EPROTO on a malformed reply, -EINVAL for a NULL tenant or
 * agent, -ENAMETOOLONG when they (percent-encoded) or the socket path are too long.
 * tenant and agent are the strings given to tailcause_sdk_request_begin (the daemon keeps the
 * first TAILCAUSE_MAX_TENANT / TAILCAUSE_MAX_NAME bytes of them).
 * The socket is $TAILCAUSE_BREAKER_SOCKET, else TAILCAUSE_SDK_BREAKER_SOCKET_DEFAULT (the
 * daemon's breaker.socket setting). One short connection per call; thread-safe; errno is kept. */
#define TAILCAUSE_SDK_BREAKER_SOCKET_DEFAULT "/run/tailcause/breaker.sock"
int tailcause_sdk_breaker_state(const char *tenant, const char *agent, uint32_t *retry_after_ms);

/* ---- vector-cache feedback ----
 * The daemon judges each (tenant, cache) of the cache_lookup probe over its breakdown window
 * (cache_breakdown in the configuration): breakdown or healthy, and a competition index, how
 * much of the cache's churn this tenant causes (its share of the cache's misses times its own
 * miss ratio; 0 when nobody else used the cache). A cache library follows it: it warms a tenant
 * up when it breaks down and sizes tenants' quotas from their competition (libtailcause_cache's
 * CacheFeedback does both).
 *
 *     struct tailcause_sdk_cache_view v;
 *     int state = tailcause_sdk_cache_state("tenant-a", "retrieval", &v);
 *     if (state == 1) ... breakdown: warm up
 *     if (state >= 0 && v.lookups > 0) ... set the quota from v.competition_permille / 1000.0
 *
 * Returns 0 healthy, 1 breakdown, or a negative errno as tailcause_sdk_breaker_state() does
 * (-EINVAL for a NULL tenant or cache). lookups is 0 for a pair the daemon has not seen in its
 * window (then the rest is 0 too). Same socket, same 100 ms bound; thread-safe; errno is kept. */
struct tailcause_sdk_cache_view {
	uint32_t competition_permille; /* 0..1000 */
	uint32_t miss_permille;	       /* (misses + stale) / lookups in the window, 0..1000 */
	uint64_t lookups;	       /* in the window */
};
int tailcause_sdk_cache_state(const char *tenant, const char *cache,
			      struct tailcause_sdk_cache_view *view);

#ifdef __cplusplus
}
#endif

#endif /* TAILCAUSE_SDK_LIB_H */
