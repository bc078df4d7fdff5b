/*
 * infertrace SDK: USDT probes (provider "infertrace") that mark requests, agent stages and
 * inference events so the infertrace daemon can attribute kernel time to them.
 *
 * Cost when no tracer is attached: one load and a predicted-not-taken branch per call. Each
 * probe has a semaphore that the kernel increments when a tracer attaches (uprobe ref_ctr), and
 * argument preparation is skipped while it is zero.
 *
 * Usable from C and C++; sdk.hpp adds RAII types. Link nothing: the probes live in the caller's
 * binary. libinfertrace_sdk.so exposes the same as plain C functions (for Python and FFI users).
 *
 * Probe arguments (all integers are 64-bit unless noted; strings are NUL-terminated):
 *   request_begin  (request_id, tenant, agent, trace_id)   trace_id: 32 hex chars or NULL
 *   request_end    (request_id, status)                     status: 0 ok, else an error code
 *   stage_begin    (request_id, stage, name)                stage: enum infertrace_stage
 *   stage_end      (request_id, stage)
 *   context_attach (request_id)                             this thread now works for request_id
 *   context_detach (request_id)
 *   cache_lookup   (request_id, cache, result, age_ns, key_hash)  result: enum infertrace_cache_result
 *   token          (request_id, index)                      one output token emitted
 *   layer_begin    (layer, batch_size)
 *   layer_end      (layer, batch_size)
 *   output_quality (request_id, entropy_micro)              entropy of the output distribution x 1e6
 */
#ifndef INFERTRACE_SDK_H
#define INFERTRACE_SDK_H

#include <stdint.h>

/* The USDT notes must carry the semaphore addresses; a <sys/sdt.h> included earlier without
 * _SDT_HAS_SEMAPHORES would emit notes without them, so tracers could never enable the probes. */
#if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)
#error "include infertrace/sdk.h before <sys/sdt.h>, or define _SDT_HAS_SEMAPHORES first"
#endif
#ifndef _SDT_HAS_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
#include <sys/sdt.h>

#ifdef __cplusplus
extern "C" {
#endif

enum infertrace_stage {
	INFERTRACE_STAGE_PROMPT = 0,
	INFERTRACE_STAGE_EMBEDDING = 1,
	INFERTRACE_STAGE_RETRIEVAL = 2,
	INFERTRACE_STAGE_GENERATION = 3,
	INFERTRACE_STAGE_TOOL = 4,
	INFERTRACE_STAGE_RESPONSE = 5,
	INFERTRACE_STAGE_OTHER = 6, /* named by the `name` argument */
};

enum infertrace_cache_result {
	INFERTRACE_CACHE_HIT = 0,
	INFERTRACE_CACHE_MISS = 1,
	INFERTRACE_CACHE_STALE = 2,
};

/* Limits the daemon enforces (longer strings are counted as invalid and truncated). */
#define INFERTRACE_MAX_TENANT 64
#define INFERTRACE_MAX_NAME 32

/* One semaphore per probe, in the ELF section the USDT note points at. Weak, so that every
 * translation unit including this header shares one copy. Hidden, so that each executable or
 * shared object keeps its own copy: the note of a module points at that module's copy, and a
 * default-visibility symbol would be interposed (a library's code would read the executable's
 * semaphore while the kernel increments the library's, and its probes would never fire). */
#define INFERTRACE_SEMAPHORE(probe)                                                            \
	__attribute__((weak, visibility("hidden"), section(".probes"))) volatile unsigned short   \
		infertrace_##probe##_semaphore
INFERTRACE_SEMAPHORE(request_begin);
INFERTRACE_SEMAPHORE(request_end);
INFERTRACE_SEMAPHORE(stage_begin);
INFERTRACE_SEMAPHORE(stage_end);
INFERTRACE_SEMAPHORE(context_attach);
INFERTRACE_SEMAPHORE(context_detach);
INFERTRACE_SEMAPHORE(cache_lookup);
INFERTRACE_SEMAPHORE(token);
INFERTRACE_SEMAPHORE(layer_begin);
INFERTRACE_SEMAPHORE(layer_end);
INFERTRACE_SEMAPHORE(output_quality);

/* True while a tracer is attached to the probe. */
#define INFERTRACE_ENABLED(probe) __builtin_expect(infertrace_##probe##_semaphore != 0, 0)

static inline void infertrace_request_begin(uint64_t request_id, const char *tenant,
					    const char *agent, const char *trace_id)
{
	if (INFERTRACE_ENABLED(request_begin))
		STAP_PROBE4(infertrace, request_begin, request_id, tenant, agent, trace_id);
}

static inline void infertrace_request_end(uint64_t request_id, int64_t status)
{
	if (INFERTRACE_ENABLED(request_end))
		STAP_PROBE2(infertrace, request_end, request_id, status);
}

static inline void infertrace_stage_begin(uint64_t request_id, int64_t stage, const char *name)
{
	if (INFERTRACE_ENABLED(stage_begin))
		STAP_PROBE3(infertrace, stage_begin, request_id, stage, name);
}

static inline void infertrace_stage_end(uint64_t request_id, int64_t stage)
{
	if (INFERTRACE_ENABLED(stage_end))
		STAP_PROBE2(infertrace, stage_end, request_id, stage);
}

static inline void infertrace_context_attach(uint64_t request_id)
{
	if (INFERTRACE_ENABLED(context_attach))
		STAP_PROBE1(infertrace, context_attach, request_id);
}

static inline void infertrace_context_detach(uint64_t request_id)
{
	if (INFERTRACE_ENABLED(context_detach))
		STAP_PROBE1(infertrace, context_detach, request_id);
}

static inline void infertrace_cache_lookup(uint64_t request_id, const char *cache, int64_t result,
					   uint64_t age_ns, uint64_t key_hash)
{
	if (INFERTRACE_ENABLED(cache_lookup))
		STAP_PROBE5(infertrace, cache_lookup, request_id, cache, result, age_ns, key_hash);
}

static inline void infertrace_token(uint64_t request_id, uint64_t index)
{
	if (INFERTRACE_ENABLED(token))
		STAP_PROBE2(infertrace, token, request_id, index);
}

static inline void infertrace_layer_begin(uint64_t layer, uint64_t batch_size)
{
	if (INFERTRACE_ENABLED(layer_begin))
		STAP_PROBE2(infertrace, layer_begin, layer, batch_size);
}

static inline void infertrace_layer_end(uint64_t layer, uint64_t batch_size)
{
	if (INFERTRACE_ENABLED(layer_end))
		STAP_PROBE2(infertrace, layer_end, layer, batch_size);
}

static inline void infertrace_output_quality(uint64_t request_id, uint64_t entropy_micro)
{
	if (INFERTRACE_ENABLED(output_quality))
		STAP_PROBE2(infertrace, output_quality, request_id, entropy_micro);
}

#ifdef __cplusplus
}
#endif

#endif /* INFERTRACE_SDK_H */
