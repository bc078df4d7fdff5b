// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: uprobe recipes, stages for runtimes without the SDK.
 *
 * Design: docs/architecture.md, "Uprobe recipes". */
#ifndef TAILCAUSE_ATTRIB_RECIPE_BPF_H
#define TAILCAUSE_ATTRIB_RECIPE_BPF_H

#include "attrib_span.bpf.h"

static __always_inline struct attrib_recipe *recipe_of(void *ctx, __u32 *index)
{
	*index = (__u32)bpf_get_attach_cookie(ctx);
	return bpf_map_lookup_elem(&attrib_recipes, index);
}

/* The identity of a recipe span: the thread's request, else a synthetic one. */
static __always_inline void recipe_identity(struct attrib_task *c, __u32 tgid, __u32 tid)
{
	__u64 id = c->thread_request ? c->thread_request : c->attached_request;
	struct attrib_request *req = id ? find_request(tgid, id) : 0;

	if (req) {
		__builtin_memcpy(&c->id, &req->id, sizeof(c->id));
		return;
	}
	__builtin_memset(&c->id, 0, sizeof(c->id));
	c->id.request_id = tid;
	c->id.tgid = tgid;
	c->id.flags = ATTRIB_ID_SYNTHETIC;
	if (!bpf_map_lookup_elem(&attrib_processes, &tgid)) {
		__u8 one = 1;

		bpf_map_update_elem(&attrib_processes, &tgid, &one, BPF_ANY);
	}
	bpf_get_current_comm(c->id.tenant, 16);
	bpf_get_current_comm(c->id.agent, 16);
}

/* A recipe span whose return was missed: retired without being sent (its end is unknown);
 * the time it held stays in the thread's cumulative components (the critical path's ring). */
static __always_inline void drop_recipe_span(struct attrib_task *c)
{
	if (!c->active || !(c->span.flags & ATTRIB_SPAN_RECIPE))
		return;
	c->active = 0;
	count_span(-1);
	compiler_barrier();
	count_error(ATTRIB_ERR_RECIPE_RETURN_MISSED);
	fold_span(c, bpf_ktime_get_ns());
	c->last_in = 0;
	c->off_ts = 0;
	c->wait_ts = 0;
}

SEC("uprobe")
int attrib_recipe_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, index;
	struct attrib_recipe *recipe = recipe_of(ctx, &index);
	struct attrib_task *c;
	__u64 *calls, now, sp = PT_REGS_SP(ctx);

	if (!recipe)
		return 0;
	calls = bpf_map_lookup_elem(&attrib_recipe_calls, &index);
	if (calls)
		*calls += 1;
	if (recipe->mode == ATTRIB_RECIPE_COUNT)
		return 0;
	c = current_context(true);
	if (!c)
		return 0;
	if (recipe->mode == ATTRIB_RECIPE_GPU_SYNC) {
		split_on_cpu(c); /* the call's own CPU time (and only it) is gpu */
		if (c->gpu_wait && sp >= c->gpu_sp) {
			count_error(ATTRIB_ERR_RECIPE_RETURN_MISSED);
			c->gpu_wait = 0; /* the previous sync's return was missed */
		}
		if (c->gpu_wait++ == 0)
			c->gpu_sp = sp;
		return 0;
	}
	if (c->recipe_depth && sp >= c->recipe_sp) {
		drop_recipe_span(c); /* the previous outermost call's return was missed */
		c->recipe_depth = 0;
	}
	if (c->recipe_depth++ > 0)
		return 0; /* nested: the outermost call is the span */
	c->recipe_sp = sp;
	if (!c->active) {
		now = bpf_ktime_get_ns();
	} else if (c->span.flags & ATTRIB_SPAN_WORKER) {
		now = span_end(c, 0, tid); /* the worker span pauses, as for an SDK stage */
	} else {
		return 0; /* inside an SDK stage: part of it */
	}
	recipe_identity(c, pid_tgid >> 32, tid);
	span_begin(c, now);
	c->begin_kind = -1;
	c->span.stage_kind =
		recipe->stage_kind < ATTRIB_STAGE_KINDS ? recipe->stage_kind : ATTRIB_STAGE_OTHER;
	__builtin_memcpy(c->span.stage_name, recipe->stage_name, sizeof(c->span.stage_name));
	c->span.flags |= ATTRIB_SPAN_RECIPE;
	if (recipe->whole_request)
		c->span.flags |= ATTRIB_SPAN_RECIPE_CALL;
	return 0;
}

SEC("uretprobe")
int attrib_recipe_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 index;
	struct attrib_recipe *recipe = recipe_of(ctx, &index);
	struct attrib_task *c;
	struct attrib_request *req;
	__u64 now, *spans;

	if (!recipe || recipe->mode == ATTRIB_RECIPE_COUNT)
		return 0;
	c = current_context(false);
	if (!c)
		return 0;
	if (recipe->mode == ATTRIB_RECIPE_GPU_SYNC) {
		if (c->gpu_wait) {
			split_on_cpu(c);
			c->gpu_wait -= 1;
		}
		return 0;
	}
	if (!c->recipe_depth || --c->recipe_depth > 0)
		return 0;
	if (!c->active || !(c->span.flags & ATTRIB_SPAN_RECIPE))
		return 0; /* an SDK stage, or the span was closed by an SDK stage_begin */
	now = span_end(c, 0, (__u32)pid_tgid);
	spans = bpf_map_lookup_elem(&attrib_recipe_spans, &index);
	if (spans)
		*spans += 1;
	if (c->attached_request) {
		req = find_request(pid_tgid >> 32, c->attached_request);
		if (req)
			worker_begin(c, req, now);
	}
	return 0;
}

#endif
