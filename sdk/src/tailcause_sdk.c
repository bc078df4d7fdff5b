// SPDX-License-Identifier: MIT
/*
 * libtailcause_sdk.so: each exported function is one probe of sdk.h, inlined here, so the
 * USDT notes and the semaphores belong to this library. Built with hidden visibility and a
 * version script: only the tailcause_sdk_* functions are exported.
 */
#include "tailcause/sdk.h"
#include "tailcause/sdk_lib.h"

#define TAILCAUSE_SDK_EXPORT __attribute__((visibility("default")))

#ifndef TAILCAUSE_SDK_VERSION
#error "the build defines TAILCAUSE_SDK_VERSION"
#endif

TAILCAUSE_SDK_EXPORT void tailcause_sdk_request_begin(uint64_t request_id, const char *tenant,
						      const char *agent, const char *trace_id)
{
	tailcause_request_begin(request_id, tenant, agent, trace_id);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_request_end(uint64_t request_id, int64_t status)
{
	tailcause_request_end(request_id, status);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_stage_begin(uint64_t request_id, int64_t stage,
						    const char *name)
{
	tailcause_stage_begin(request_id, stage, name);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_stage_end(uint64_t request_id, int64_t stage)
{
	tailcause_stage_end(request_id, stage);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_context_attach(uint64_t request_id)
{
	tailcause_context_attach(request_id);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_context_detach(uint64_t request_id)
{
	tailcause_context_detach(request_id);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_cache_lookup(uint64_t request_id, const char *cache,
						     int64_t result, uint64_t age_ns,
						     uint64_t key_hash)
{
	tailcause_cache_lookup(request_id, cache, result, age_ns, key_hash);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_token(uint64_t request_id, uint64_t index)
{
	tailcause_token(request_id, index);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_layer_begin(uint64_t layer, uint64_t batch_size)
{
	tailcause_layer_begin(layer, batch_size);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_layer_end(uint64_t layer, uint64_t batch_size)
{
	tailcause_layer_end(layer, batch_size);
}

TAILCAUSE_SDK_EXPORT void tailcause_sdk_output_quality(uint64_t request_id, uint64_t entropy_micro)
{
	tailcause_output_quality(request_id, entropy_micro);
}

#define TAILCAUSE_SDK_BIT(probe, bit) ((uint32_t)(tailcause_##probe##_semaphore != 0) << (bit))

TAILCAUSE_SDK_EXPORT uint32_t tailcause_sdk_enabled_mask(void)
{
	return TAILCAUSE_SDK_BIT(request_begin, TAILCAUSE_SDK_PROBE_REQUEST_BEGIN) |
	       TAILCAUSE_SDK_BIT(request_end, TAILCAUSE_SDK_PROBE_REQUEST_END) |
	       TAILCAUSE_SDK_BIT(stage_begin, TAILCAUSE_SDK_PROBE_STAGE_BEGIN) |
	       TAILCAUSE_SDK_BIT(stage_end, TAILCAUSE_SDK_PROBE_STAGE_END) |
	       TAILCAUSE_SDK_BIT(context_attach, TAILCAUSE_SDK_PROBE_CONTEXT_ATTACH) |
	       TAILCAUSE_SDK_BIT(context_detach, TAILCAUSE_SDK_PROBE_CONTEXT_DETACH) |
	       TAILCAUSE_SDK_BIT(cache_lookup, TAILCAUSE_SDK_PROBE_CACHE_LOOKUP) |
	       TAILCAUSE_SDK_BIT(token, TAILCAUSE_SDK_PROBE_TOKEN) |
	       TAILCAUSE_SDK_BIT(layer_begin, TAILCAUSE_SDK_PROBE_LAYER_BEGIN) |
	       TAILCAUSE_SDK_BIT(layer_end, TAILCAUSE_SDK_PROBE_LAYER_END) |
	       TAILCAUSE_SDK_BIT(output_quality, TAILCAUSE_SDK_PROBE_OUTPUT_QUALITY);
}

TAILCAUSE_SDK_EXPORT const volatile unsigned short *tailcause_sdk_semaphore(uint32_t probe)
{
	switch (probe) {
	case TAILCAUSE_SDK_PROBE_REQUEST_BEGIN: return &tailcause_request_begin_semaphore;
	case TAILCAUSE_SDK_PROBE_REQUEST_END: return &tailcause_request_end_semaphore;
	case TAILCAUSE_SDK_PROBE_STAGE_BEGIN: return &tailcause_stage_begin_semaphore;
	case TAILCAUSE_SDK_PROBE_STAGE_END: return &tailcause_stage_end_semaphore;
	case TAILCAUSE_SDK_PROBE_CONTEXT_ATTACH: return &tailcause_context_attach_semaphore;
	case TAILCAUSE_SDK_PROBE_CONTEXT_DETACH: return &tailcause_context_detach_semaphore;
	case TAILCAUSE_SDK_PROBE_CACHE_LOOKUP: return &tailcause_cache_lookup_semaphore;
	case TAILCAUSE_SDK_PROBE_TOKEN: return &tailcause_token_semaphore;
	case TAILCAUSE_SDK_PROBE_LAYER_BEGIN: return &tailcause_layer_begin_semaphore;
	case TAILCAUSE_SDK_PROBE_LAYER_END: return &tailcause_layer_end_semaphore;
	case TAILCAUSE_SDK_PROBE_OUTPUT_QUALITY: return &tailcause_output_quality_semaphore;
	}
	return 0;
}

TAILCAUSE_SDK_EXPORT const char *tailcause_sdk_version(void)
{
	return TAILCAUSE_SDK_VERSION;
}
