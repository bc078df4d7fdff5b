/*
 * libinfertrace_sdk.so: each exported function is one probe of sdk.h, inlined here, so the
 * USDT notes and the semaphores belong to this library. Built with hidden visibility and a
 * version script: only the infertrace_sdk_* functions are exported.
 */
#include "infertrace/sdk.h"
#include "infertrace/sdk_lib.h"

#define INFERTRACE_SDK_EXPORT __attribute__((visibility("default")))

#ifndef INFERTRACE_SDK_VERSION
#error "the build defines INFERTRACE_SDK_VERSION"
#endif

INFERTRACE_SDK_EXPORT void infertrace_sdk_request_begin(uint64_t request_id, const char *tenant,
							const char *agent, const char *trace_id)
{
	infertrace_request_begin(request_id, tenant, agent, trace_id);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_request_end(uint64_t request_id, int64_t status)
{
	infertrace_request_end(request_id, status);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_stage_begin(uint64_t request_id, int64_t stage,
						      const char *name)
{
	infertrace_stage_begin(request_id, stage, name);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_stage_end(uint64_t request_id, int64_t stage)
{
	infertrace_stage_end(request_id, stage);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_context_attach(uint64_t request_id)
{
	infertrace_context_attach(request_id);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_context_detach(uint64_t request_id)
{
	infertrace_context_detach(request_id);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_cache_lookup(uint64_t request_id, const char *cache,
						       int64_t result, uint64_t age_ns,
						       uint64_t key_hash)
{
	infertrace_cache_lookup(request_id, cache, result, age_ns, key_hash);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_token(uint64_t request_id, uint64_t index)
{
	infertrace_token(request_id, index);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_layer_begin(uint64_t layer, uint64_t batch_size)
{
	infertrace_layer_begin(layer, batch_size);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_layer_end(uint64_t layer, uint64_t batch_size)
{
	infertrace_layer_end(layer, batch_size);
}

INFERTRACE_SDK_EXPORT void infertrace_sdk_output_quality(uint64_t request_id,
							 uint64_t entropy_micro)
{
	infertrace_output_quality(request_id, entropy_micro);
}

#define INFERTRACE_SDK_BIT(probe, bit) ((uint32_t)(infertrace_##probe##_semaphore != 0) << (bit))

INFERTRACE_SDK_EXPORT uint32_t infertrace_sdk_enabled_mask(void)
{
	return INFERTRACE_SDK_BIT(request_begin, INFERTRACE_SDK_PROBE_REQUEST_BEGIN) |
	       INFERTRACE_SDK_BIT(request_end, INFERTRACE_SDK_PROBE_REQUEST_END) |
	       INFERTRACE_SDK_BIT(stage_begin, INFERTRACE_SDK_PROBE_STAGE_BEGIN) |
	       INFERTRACE_SDK_BIT(stage_end, INFERTRACE_SDK_PROBE_STAGE_END) |
	       INFERTRACE_SDK_BIT(context_attach, INFERTRACE_SDK_PROBE_CONTEXT_ATTACH) |
	       INFERTRACE_SDK_BIT(context_detach, INFERTRACE_SDK_PROBE_CONTEXT_DETACH) |
	       INFERTRACE_SDK_BIT(cache_lookup, INFERTRACE_SDK_PROBE_CACHE_LOOKUP) |
	       INFERTRACE_SDK_BIT(token, INFERTRACE_SDK_PROBE_TOKEN) |
	       INFERTRACE_SDK_BIT(layer_begin, INFERTRACE_SDK_PROBE_LAYER_BEGIN) |
	       INFERTRACE_SDK_BIT(layer_end, INFERTRACE_SDK_PROBE_LAYER_END) |
	       INFERTRACE_SDK_BIT(output_quality, INFERTRACE_SDK_PROBE_OUTPUT_QUALITY);
}

INFERTRACE_SDK_EXPORT const volatile unsigned short *infertrace_sdk_semaphore(uint32_t probe)
{
	switch (probe) {
	case INFERTRACE_SDK_PROBE_REQUEST_BEGIN: return &infertrace_request_begin_semaphore;
	case INFERTRACE_SDK_PROBE_REQUEST_END: return &infertrace_request_end_semaphore;
	case INFERTRACE_SDK_PROBE_STAGE_BEGIN: return &infertrace_stage_begin_semaphore;
	case INFERTRACE_SDK_PROBE_STAGE_END: return &infertrace_stage_end_semaphore;
	case INFERTRACE_SDK_PROBE_CONTEXT_ATTACH: return &infertrace_context_attach_semaphore;
	case INFERTRACE_SDK_PROBE_CONTEXT_DETACH: return &infertrace_context_detach_semaphore;
	case INFERTRACE_SDK_PROBE_CACHE_LOOKUP: return &infertrace_cache_lookup_semaphore;
	case INFERTRACE_SDK_PROBE_TOKEN: return &infertrace_token_semaphore;
	case INFERTRACE_SDK_PROBE_LAYER_BEGIN: return &infertrace_layer_begin_semaphore;
	case INFERTRACE_SDK_PROBE_LAYER_END: return &infertrace_layer_end_semaphore;
	case INFERTRACE_SDK_PROBE_OUTPUT_QUALITY: return &infertrace_output_quality_semaphore;
	}
	return 0;
}

INFERTRACE_SDK_EXPORT const char *infertrace_sdk_version(void)
{
	return INFERTRACE_SDK_VERSION;
}
