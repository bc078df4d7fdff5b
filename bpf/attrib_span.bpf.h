// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: beginning, ending and sending spans (stages and worker spans). */
#ifndef TAILCAUSE_ATTRIB_SPAN_BPF_H
#define TAILCAUSE_ATTRIB_SPAN_BPF_H

#include "attrib_sched.bpf.h"

/* USDT programs run with preemption enabled: a stage_begin or stage_end handler can be switched
 * out halfway, and the sched_switch handler then sees the context. So a span is published
 * (active = 1) only once it is complete, and retired (active = 0) before its end is read. */
#define compiler_barrier() asm volatile("" ::: "memory")

/* Bytes the current thread has read through read(2), pread64(2), readv(2) and the like: the
 * kernel's own per-thread count (CONFIG_TASK_XACCT), so no syscall tracepoint is needed (one
 * would put every system call of every process on the slow path). */
static __always_inline __u64 current_rchar(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if (!bpf_core_field_exists(t->ioac.rchar))
		return 0;
	return BPF_CORE_READ(t, ioac.rchar);
}

/* Critical path (attrib_critpath.bpf.h). The thread's cumulative components now (the running
 * segment excluded). */
static __always_inline __u64 cum_now(struct attrib_task *c, int i)
{
	return c->cum_base[i & (ATTRIB_KERNEL_COMPONENTS - 1)] +
	       c->span.component_ns[i & (ATTRIB_KERNEL_COMPONENTS - 1)];
}

/* A state change of a span thread at `now`: its cumulative components go into the ring of
 * every level whose spacing has passed since its last mark. */
static __always_inline void mark_state(struct attrib_task *c, __u64 now)
{
	int i, level;

	for (level = 0; level < ATTRIB_HISTORY_LEVELS; level++) {
		__u32 next = c->history_next[level];
		struct attrib_mark *last = &c->history[level][(next - 1) & (ATTRIB_HISTORY - 1)];
		struct attrib_mark *m = &c->history[level][next & (ATTRIB_HISTORY - 1)];

		if (next && now - last->ts < ATTRIB_HISTORY_SPACING_NS(level))
			break; /* coarser levels are spaced wider still */
		m->ts = now;
		for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++)
			m->cum[i] = cum_now(c, i);
		c->history_next[level] = next + 1;
	}
}

/* A span ended: its components move to the thread's base (the ring stays continuous). */
static __always_inline void fold_span(struct attrib_task *c, __u64 now)
{
	int i;

	for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++) {
		c->cum_base[i] += c->span.component_ns[i];
		c->span.component_ns[i] = 0;
	}
	mark_state(c, now);
}

/* The span starts now, on a running thread. */
static __always_inline void span_begin(struct attrib_task *c, __u64 now)
{
	__builtin_memset(&c->span, 0, sizeof(c->span));
	__builtin_memset(c->peers, 0, sizeof(c->peers));
	c->rchar_start = current_rchar();
	c->span.start_ns = now;
	c->last_in = now;
	c->off_ts = 0;
	c->wait_ts = 0;
	c->reclaiming = 0; /* a span starts in user space, never inside reclaim */
	mark_state(c, now);
	/* Counted before it is published (count_span()). */
	count_span(1);
	compiler_barrier();
	c->active = 1;
}

static __always_inline void emit_span(struct attrib_task *c, __u32 tid)
{
	struct attrib_stage_record *r = bpf_ringbuf_reserve(&attrib_events, sizeof(*r), 0);

	if (!r) {
		count_lost();
		return;
	}
	r->hdr.type = ATTRIB_REC_STAGE;
	r->hdr.tid = tid;
	r->cgroup_id = task_cgroup_id((struct task_struct *)bpf_get_current_task());
	__builtin_memcpy(&r->id, &c->id, sizeof(r->id));
	__builtin_memcpy(&r->span, &c->span, sizeof(r->span));
	bpf_ringbuf_submit(r, submit_flags(sizeof(*r)));
}

/* Ends the span on the running thread that owns it, and sends it. Returns the end time. */
static __always_inline __u64 span_end(struct attrib_task *c, __u32 flags, __u32 tid)
{
	__u64 now;

	c->active = 0;
	count_span(-1);
	compiler_barrier();
	/* Read after retiring: switches before this point were accounted, later ones are not. */
	now = bpf_ktime_get_ns();
	repair_missed_switch_in(c, bpf_get_current_task_btf(), now);
	add(c, ATTRIB_ON_CPU, c->last_in, now);
	c->span.bytes_read = current_rchar() - c->rchar_start;
	c->span.end_ns = now;
	c->span.flags |= flags;
	emit_span(c, tid);
	fold_span(c, now);
	c->last_in = 0;
	c->off_ts = 0;
	c->wait_ts = 0;
	return now;
}

/* A worker span for `req` starts now on this thread. */
static __always_inline void worker_begin(struct attrib_task *c, struct attrib_request *req,
					 __u64 now)
{
	__builtin_memcpy(&c->id, &req->id, sizeof(c->id));
	span_begin(c, now);
	c->span.stage_kind = req->stage_kind;
	__builtin_memcpy(c->span.stage_name, req->stage_name, sizeof(c->span.stage_name));
	c->span.flags |= ATTRIB_SPAN_WORKER;
}

/* The thread's own stage (not a worker or recipe span) is open, and is one of `request_id`. */
static __always_inline bool own_stage_of(struct attrib_task *c, __u64 request_id)
{
	return c && c->active && !(c->span.flags & (ATTRIB_SPAN_WORKER | ATTRIB_SPAN_RECIPE)) &&
	       c->id.request_id == request_id;
}

/* Ends the thread's own stage and sends it; a worker span of the request the thread is
 * attached to resumes. */
static __always_inline void stage_close(struct attrib_task *c, __u32 tgid, __u32 tid, __u32 flags)
{
	__u64 now = span_end(c, flags, tid);
	struct attrib_request *req = find_request(tgid, c->id.request_id);

	if (req)
		req->stage_kind = ATTRIB_STAGE_NONE;
	if (c->attached_request) {
		req = find_request(tgid, c->attached_request);
		if (req)
			worker_begin(c, req, now);
	}
}

/* Fills `id` from the request, or marks it unknown (counted). */
static __always_inline void identity_of(struct attrib_identity *id, __u32 tgid, __u64 request_id)
{
	struct attrib_request *req = find_request(tgid, request_id);

	if (req) {
		__builtin_memcpy(id, &req->id, sizeof(*id));
	} else {
		count_error(ATTRIB_ERR_UNKNOWN_REQUEST);
		unknown_identity(id, tgid, request_id);
	}
}

/* A thread that ends mid-span (exit, or exec replacing the program) sends it flagged. */
static __always_inline void abort_span(struct task_struct *p)
{
	struct attrib_task *c = bpf_task_storage_get(&attrib_tasks, p, 0, 0);

	if (!c)
		return;
	if (c->active) {
		count_error(ATTRIB_ERR_EXIT_MID_STAGE);
		span_end(c, ATTRIB_SPAN_ABORTED, BPF_CORE_READ(p, pid));
	}
	c->attached_request = 0;
	c->thread_request = 0;
	c->recipe_depth = 0;
	c->gpu_wait = 0;
}

static __always_inline void emit_process(__u32 type, __u32 pid, __u64 flags)
{
	struct attrib_process_record *r = bpf_ringbuf_reserve(&attrib_events, sizeof(*r), 0);

	if (!r) {
		count_lost();
		return;
	}
	r->hdr.type = type;
	r->hdr.tid = pid;
	bpf_ringbuf_submit(r, flags);
}

#endif
