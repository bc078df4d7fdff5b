// SPDX-License-Identifier: MIT
/*
 * tailcause SDK: USDT probes (provider "tailcause") that mark requests, agent stages and
 * inference events so the tailcause daemon can attribute kernel time to them.
 *
 * Cost when no tracer is attached: one load and a predicted-not-taken branch per call. Each
 * probe has a semaphore that the kernel increments when a tracer attaches (uprobe ref_ctr), and
 * argument preparation is skipped while it is zero.
 *
 * Usable from C and C++; sdk.hpp adds RAII types. Link nothing: the probes live in the caller's
 * binary. libtailcause_sdk.so exposes the same as plain C functions (for Python and FFI users).
 *
 * Probe arguments (all integers are 64-bit unless noted; strings are NUL-terminated):
 *   request_begin  (request_id, tenant, agent, trace_id)   trace_id: NULL, 32 hex chars, or a
 *                                                          W3C traceparent (00-<trace id>-<parent
 *                                                          span id>-<flags>): the request span is
 *                                                          then a child of the caller's span
 *   request_end    (request_id, status)                     status: 0 ok, else an error code;
 *                                                          ends the calling thread's stage of
 *                                                          request_id if one is still open
 *   stage_begin    (request_id, stage, name)                stage: enum tailcause_stage; for
 *                                                          GENERATION, a name other than
 *                                                          "generation" is the model, as
 *                                                          "[provider:]model" (OTLP gen_ai.*);
 *                                                          | TAILCAUSE_STAGE_FOLLOWS: the
 *                                                          thread's open stage of request_id
 *                                                          ends where this one begins
 *   stage_end      (request_id, stage)
 *   context_attach (request_id)                             this thread now works for request_id
 *   context_detach (request_id)
 *   cache_lookup   (request_id, cache, result, age_ns, key_hash)
 *                                                          result: enum tailcause_cache_result
 *   token          (request_id, index)                      one output token emitted
 *   layer_begin    (layer, batch_size)
 *   layer_end      (layer, batch_size)
 *   output_quality (request_id, entropy_micro)              entropy of the output x 1e6
 *
 * String arguments are read (touched) by the caller before the probe fires, up to the limits
 * below, so that the tracer finds their pages present.
 */
#ifndef TAILCAUSE_SDK_H
#define TAILCAUSE_SDK_H

#include <stdint.h>

/* The USDT notes must carry the semaphore addresses; a <sys/sdt.h> included earlier without
 * _SDT_HAS_SEMAPHORES would emit notes without them, so tracers could never enable the probes. */
#if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)
#error "include tailcause/sdk.h before <sys/sdt.h>, or define _SDT_HAS_SEMAPHORES first"
#endif
#ifndef _SDT_HAS_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
#include <sys/sdt.h>

/* On x86-64 the probe site is a 5-byte nop instead of sdt.h's 1-byte one: from Linux 6.18 the
 * kernel turns a uprobe on a 5-byte nop into a call to a trampoline and a syscall after its first
 * hit, so a traced probe costs no breakpoint trap; on older kernels, and for every USDT tool, it
 * is still a nop the probe sits on. It holds for every STAP_PROBE after this header in the
 * translation unit (the cache library's cache_action probe is one). */
#if defined(__x86_64__)
#undef _SDT_NOP
/* The bytes the kernel looks for (0f 1f 44 00 00), spelled out: an assembler shortens "nopl
 * 0(%rax,%rax,1)" to 4 bytes, and sdt.h's macros cannot pass a comma through. */
#define _SDT_NOP                                                                                   \
	.byte 0x0f;                                                                                \
	.byte 0x1f;                                                                                \
	.byte 0x44;                                                                                \
	.byte 0x00;                                                                                \
	.byte 0x00
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum tailcause_stage {
	TAILCAUSE_STAGE_PROMPT = 0,
	TAILCAUSE_STAGE_EMBEDDING = 1,
	TAILCAUSE_STAGE_RETRIEVAL = 2,
	TAILCAUSE_STAGE_GENERATION = 3,
	TAILCAUSE_STAGE_TOOL = 4,
	TAILCAUSE_STAGE_RESPONSE = 5,
	TAILCAUSE_STAGE_OTHER = 6, /* named by the `name` argument */
};

/* Or'ed into stage_begin's stage: the calling thread's open stage of the same request ends where
 * the new one begins, without a stage_end of its own (one probe where there would be two). With
 * no such stage open it is a plain stage_begin; a stage of another request is still an error. */
#define TAILCAUSE_STAGE_FOLLOWS 0x100

enum tailcause_cache_result {
	TAILCAUSE_CACHE_HIT = 0,
	TAILCAUSE_CACHE_MISS = 1,
	TAILCAUSE_CACHE_STALE = 2,
};

/* Limits the daemon enforces (longer strings are counted as invalid and truncated). */
#define TAILCAUSE_MAX_TENANT 64
#define TAILCAUSE_MAX_NAME   32

/* One semaphore per probe, in the ELF section the USDT note points at. Weak, so that every
 * translation unit including this header shares one copy. Hidden, so that each executable or
 * shared object keeps its own copy: the note of a module points at that module's copy, and a
 * default-visibility symbol would be interposed (a library's code would read the executable's
 * semaphore while the kernel increments the library's, and its probes would never fire). */
#define TAILCAUSE_SEMAPHORE(probe)                                                                 \
	__attribute__((weak, visibility("hidden"),                                                 \
		       section(".probes"))) volatile unsigned short tailcause_##probe##_semaphore
TAILCAUSE_SEMAPHORE(request_begin);
TAILCAUSE_SEMAPHORE(request_end);
TAILCAUSE_SEMAPHORE(stage_begin);
TAILCAUSE_SEMAPHORE(stage_end);
TAILCAUSE_SEMAPHORE(context_attach);
TAILCAUSE_SEMAPHORE(context_detach);
TAILCAUSE_SEMAPHORE(cache_lookup);
TAILCAUSE_SEMAPHORE(token);
TAILCAUSE_SEMAPHORE(layer_begin);
TAILCAUSE_SEMAPHORE(layer_end);
TAILCAUSE_SEMAPHORE(output_quality);

/* True while a tracer is attached to the probe. */
#define TAILCAUSE_ENABLED(probe) __builtin_expect(tailcause_##probe##_semaphore != 0, 0)

#define TAILCAUSE_TRACE_ID_CHARS    32
#define TAILCAUSE_TRACEPARENT_CHARS 55 /* version 00: 2 + 1 + 32 + 1 + 16 + 1 + 2 */

/* Reads a string argument up to its NUL or one byte past the daemon's limit (as far as the
 * daemon reads), so that its pages are present when the probe fires: the daemon's BPF program
 * cannot fault a page in, and a literal on a page the process has not touched yet would read as
 * nothing (the request labelled "unknown"). Only called while a tracer is attached. */
static inline void tailcause_touch_string(const char *s, unsigned long max)
{
	const volatile char *p = s;
	unsigned long i;

	if (!p)
		return;
	for (i = 0; i <= max + 1 && p[i]; i++)
		;
}

static inline void tailcause_request_begin(uint64_t request_id, const char *tenant,
					   const char *agent, const char *trace_id)
{
	if (TAILCAUSE_ENABLED(request_begin)) {
		tailcause_touch_string(tenant, TAILCAUSE_MAX_TENANT);
		tailcause_touch_string(agent, TAILCAUSE_MAX_NAME);
		tailcause_touch_string(trace_id, TAILCAUSE_TRACEPARENT_CHARS);
		STAP_PROBE4(tailcause, request_begin, request_id, tenant, agent, trace_id);
	}
}

static inline void tailcause_request_end(uint64_t request_id, int64_t status)
{
	if (TAILCAUSE_ENABLED(request_end))
		STAP_PROBE2(tailcause, request_end, request_id, status);
}

static inline void tailcause_stage_begin(uint64_t request_id, int64_t stage, const char *name)
{
	if (TAILCAUSE_ENABLED(stage_begin)) {
		tailcause_touch_string(name, TAILCAUSE_MAX_NAME);
		STAP_PROBE3(tailcause, stage_begin, request_id, stage, name);
	}
}

static inline void tailcause_stage_end(uint64_t request_id, int64_t stage)
{
	if (TAILCAUSE_ENABLED(stage_end))
		STAP_PROBE2(tailcause, stage_end, request_id, stage);
}

static inline void tailcause_context_attach(uint64_t request_id)
{
	if (TAILCAUSE_ENABLED(context_attach))
		STAP_PROBE1(tailcause, context_attach, request_id);
}

static inline void tailcause_context_detach(uint64_t request_id)
{
	if (TAILCAUSE_ENABLED(context_detach))
		STAP_PROBE1(tailcause, context_detach, request_id);
}

static inline void tailcause_cache_lookup(uint64_t request_id, const char *cache, int64_t result,
					  uint64_t age_ns, uint64_t key_hash)
{
	if (TAILCAUSE_ENABLED(cache_lookup)) {
		tailcause_touch_string(cache, TAILCAUSE_MAX_NAME);
		STAP_PROBE5(tailcause, cache_lookup, request_id, cache, result, age_ns, key_hash);
	}
}

static inline void tailcause_token(uint64_t request_id, uint64_t index)
{
	if (TAILCAUSE_ENABLED(token))
		STAP_PROBE2(tailcause, token, request_id, index);
}

static inline void tailcause_layer_begin(uint64_t layer, uint64_t batch_size)
{
	if (TAILCAUSE_ENABLED(layer_begin))
		STAP_PROBE2(tailcause, layer_begin, layer, batch_size);
}

static inline void tailcause_layer_end(uint64_t layer, uint64_t batch_size)
{
	if (TAILCAUSE_ENABLED(layer_end))
		STAP_PROBE2(tailcause, layer_end, layer, batch_size);
}

static inline void tailcause_output_quality(uint64_t request_id, uint64_t entropy_micro)
{
	if (TAILCAUSE_ENABLED(output_quality))
		STAP_PROBE2(tailcause, output_quality, request_id, entropy_micro);
}

#ifdef __cplusplus
}
#endif

#endif /* TAILCAUSE_SDK_H */
