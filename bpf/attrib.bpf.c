// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family: joins kernel events to requests, agent stages and tenants.
 *
 * Layout: attrib_context.bpf.h (context, maps, counters), attrib_sched.bpf.h (off-CPU
 * classification), attrib_span.bpf.h (spans and records), page_cache.bpf.h (page-cache
 * helpers shared with the memory family); the SDK and scheduler programs are here, the
 * recipe, memory and process-lifetime programs in attrib_recipe.bpf.h, attrib_memory.bpf.h
 * and attrib_lifetime.bpf.h.
 *
 * Design: docs/architecture.md, "The attribution family". */
#include "common.bpf.h"

#define BPF_USDT_MAX_SPEC_CNT 1024 /* USDT call sites attached at once, over all binaries */
#include <bpf/usdt.bpf.h>

#include "attrib_context.bpf.h"
#include "page_cache.bpf.h"
#include "attrib_span.bpf.h"
#include "attrib_critpath.bpf.h"
#include "attrib_recipe.bpf.h"
#include "attrib_memory.bpf.h"
#include "attrib_lifetime.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* ---- SDK probes ---------------------------------------------------------------------- */

SEC("usdt")
int BPF_USDT(request_begin, __u64 request_id, const char *tenant, const char *agent,
	     const char *trace_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_request_key key = {.tgid = pid_tgid >> 32, .request_id = request_id};
	__u32 zero = 0;
	__u8 one = 1;
	struct attrib_request *r = bpf_map_lookup_elem(&attrib_scratch, &zero);
	struct attrib_task *c;
	long err;

	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r));
	r->id.request_id = request_id;
	r->id.tgid = key.tgid;
	if (read_user_string(r->id.tenant, ATTRIB_MAX_TENANT, tenant)) {
		r->id.flags |= ATTRIB_ID_TENANT_TRUNCATED;
		count_error(ATTRIB_ERR_TENANT_TOO_LONG);
	}
	if (read_user_string(r->id.agent, ATTRIB_MAX_NAME, agent)) {
		r->id.flags |= ATTRIB_ID_AGENT_TRUNCATED;
		count_error(ATTRIB_ERR_NAME_TOO_LONG);
	}
	if (read_user_string(r->id.trace_id, ATTRIB_TRACE_ID_CHARS, trace_id)) {
		r->id.trace_id[0] = 0;
		r->id.flags |= ATTRIB_ID_BAD_TRACE_ID;
		count_error(ATTRIB_ERR_BAD_TRACE_ID);
	}
	r->start_ns = bpf_ktime_get_ns();
	r->cgroup_id = task_cgroup_id((struct task_struct *)bpf_get_current_task());
	r->stage_kind = ATTRIB_STAGE_NONE;

	err = bpf_map_update_elem(&attrib_requests, &key, r, BPF_NOEXIST);
	if (err == -EEXIST) {
		count_error(ATTRIB_ERR_REQUEST_BEGIN_TWICE);
		err = bpf_map_update_elem(&attrib_requests, &key, r, BPF_EXIST);
	}
	if (err) {
		count_lost();
		return 0;
	}
	if (!bpf_map_lookup_elem(&attrib_processes, &key.tgid))
		bpf_map_update_elem(&attrib_processes, &key.tgid, &one, BPF_ANY);
	/* The thread's request, for uprobe recipe spans it runs into. */
	c = current_context(true);
	if (c)
		c->thread_request = request_id;
	return 0;
}

SEC("usdt")
int BPF_USDT(request_end, __u64 request_id, __s64 status)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_request_key key = {.tgid = pid_tgid >> 32, .request_id = request_id};
	struct attrib_request *req = bpf_map_lookup_elem(&attrib_requests, &key);
	struct attrib_request_record *r;
	struct attrib_task *c = current_context(false);

	if (c && c->thread_request == request_id)
		c->thread_request = 0;
	/* The request's stage still open on this thread ends with it, sent before the request. */
	if (own_stage_of(c, request_id))
		stage_close(c, key.tgid, (__u32)pid_tgid, 0);
	if (!req) {
		count_error(ATTRIB_ERR_REQUEST_END_WITHOUT_BEGIN);
		return 0;
	}
	r = bpf_ringbuf_reserve(&attrib_events, sizeof(*r), 0);
	if (r) {
		r->hdr.type = ATTRIB_REC_REQUEST;
		r->hdr.tid = (__u32)pid_tgid;
		r->cgroup_id = req->cgroup_id;
		__builtin_memcpy(&r->id, &req->id, sizeof(r->id));
		r->start_ns = req->start_ns;
		r->end_ns = bpf_ktime_get_ns();
		r->status = status;
		r->tokens = req->tokens;
		r->first_token_ns = req->first_token_ns;
		r->last_token_ns = req->last_token_ns;
		bpf_ringbuf_submit(r, submit_flags(sizeof(*r)));
	} else {
		count_lost();
	}
	bpf_map_delete_elem(&attrib_requests, &key);
	return 0;
}

SEC("usdt")
int BPF_USDT(stage_begin, __u64 request_id, __s64 kind, const char *name)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct attrib_task *c = current_context(true);
	struct attrib_request *req;
	bool follows = kind >= 0 && (kind & ATTRIB_STAGE_FOLLOWS);
	__u64 now;

	if (!c)
		return 0;
	if (follows)
		kind &= ~(__s64)ATTRIB_STAGE_FOLLOWS;
	if (!c->active) {
		now = bpf_ktime_get_ns();
	} else if (c->span.flags & (ATTRIB_SPAN_WORKER | ATTRIB_SPAN_RECIPE)) {
		/* A worker span pauses for this thread's own stage; a recipe span gives way to it.
		 */
		now = span_end(c, 0, tid);
	} else if (follows && c->id.request_id == request_id) {
		now = span_end(c, 0, tid); /* the stage it follows ends here */
	} else {
		count_error(ATTRIB_ERR_STAGE_BEGIN_TWICE);
		now = span_end(c, ATTRIB_SPAN_REPLACED, tid);
	}
	/* Published first; what follows is not read by the scheduler handlers. */
	span_begin(c, now);
	c->begin_kind = kind;
	if (kind < 0 || kind >= ATTRIB_STAGE_KINDS) {
		count_error(ATTRIB_ERR_UNKNOWN_STAGE_KIND);
		kind = ATTRIB_STAGE_OTHER;
	}
	c->span.stage_kind = kind;
	if (read_user_string(c->span.stage_name, ATTRIB_MAX_NAME, name)) {
		c->span.flags |= ATTRIB_SPAN_NAME_TRUNCATED;
		count_error(ATTRIB_ERR_NAME_TOO_LONG);
	}
	req = find_request(tgid, request_id);
	if (req) {
		__builtin_memcpy(&c->id, &req->id, sizeof(c->id));
		req->stage_kind = kind;
		__builtin_memcpy(req->stage_name, c->span.stage_name, sizeof(req->stage_name));
	} else {
		count_error(ATTRIB_ERR_UNKNOWN_REQUEST);
		unknown_identity(&c->id, tgid, request_id);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(stage_end, __u64 request_id, __s64 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct attrib_task *c = current_context(false);
	__u32 flags = 0;

	if (!c || !c->active || (c->span.flags & (ATTRIB_SPAN_WORKER | ATTRIB_SPAN_RECIPE))) {
		count_error(ATTRIB_ERR_STAGE_END_WITHOUT_BEGIN);
		return 0;
	}
	if (c->id.request_id != request_id || c->begin_kind != kind) {
		count_error(ATTRIB_ERR_STAGE_MISMATCH);
		flags = ATTRIB_SPAN_MISMATCH;
	}
	stage_close(c, tgid, tid, flags);
	return 0;
}

SEC("usdt")
int BPF_USDT(context_attach, __u64 request_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_request *req = find_request(pid_tgid >> 32, request_id);
	struct attrib_task *c;
	__u64 now = 0;

	if (!req) {
		count_error(ATTRIB_ERR_UNKNOWN_REQUEST);
		return 0;
	}
	c = current_context(true);
	if (!c)
		return 0;
	if (c->attached_request) {
		count_error(ATTRIB_ERR_ATTACH_TWICE);
		if (c->active && (c->span.flags & ATTRIB_SPAN_WORKER))
			now = span_end(c, 0, (__u32)pid_tgid);
	}
	c->attached_request = request_id;
	if (!c->active) { /* else its own stage runs on; the worker span starts when it ends */
		if (!now)
			now = bpf_ktime_get_ns();
		backfill_wake(c, bpf_get_current_task_btf(), now);
		worker_begin(c, req, now);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(context_detach, __u64 request_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_task *c = current_context(false);

	if (!c || !c->attached_request) {
		count_error(ATTRIB_ERR_DETACH_WITHOUT_ATTACH);
		return 0;
	}
	if (c->attached_request != request_id)
		count_error(ATTRIB_ERR_STAGE_MISMATCH);
	if (c->active && (c->span.flags & ATTRIB_SPAN_WORKER))
		span_end(c, 0, (__u32)pid_tgid);
	c->attached_request = 0;
	return 0;
}

/* A zeroed record of `size` bytes from the ring with its header filled, for records whose
 * fields are set only in part (strings shorter than their field); NULL (counted) when full. */
static __always_inline void *reserve_zeroed(__u64 size, __u32 type, __u32 tid)
{
	struct attrib_record_header *h = bpf_ringbuf_reserve(&attrib_events, size, 0);

	if (!h) {
		count_lost();
		return NULL;
	}
	__builtin_memset(h, 0, size);
	h->type = type;
	h->tid = tid;
	return h;
}

SEC("usdt")
int BPF_USDT(cache_lookup, __u64 request_id, const char *cache, __s64 result, __u64 age_ns,
	     __u64 key_hash)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_cache_record *r;

	if (result < 0 || result > 2) {
		count_error(ATTRIB_ERR_BAD_CACHE_RESULT);
		return 0;
	}
	r = reserve_zeroed(sizeof(*r), ATTRIB_REC_CACHE, (__u32)pid_tgid);
	if (!r)
		return 0;
	identity_of(&r->id, pid_tgid >> 32, request_id);
	if (read_user_string(r->cache, ATTRIB_MAX_NAME, cache)) {
		r->name_truncated = 1;
		count_error(ATTRIB_ERR_NAME_TOO_LONG);
	}
	r->result = result;
	r->age_ns = age_ns;
	r->key_hash = key_hash;
	r->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, submit_flags(sizeof(*r)));
	return 0;
}

/* A cache library's action (libtailcause_cache's cache_action probe): counted per tenant,
 * cache and action by user space. Not tied to a request. */
SEC("usdt")
int BPF_USDT(cache_action, const char *tenant, const char *cache, __s64 action, __u64 count)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_cache_action_record *r;

	if (action < 0 || action >= ATTRIB_CACHE_ACTIONS) {
		count_error(ATTRIB_ERR_BAD_CACHE_ACTION);
		return 0;
	}
	r = reserve_zeroed(sizeof(*r), ATTRIB_REC_CACHE_ACTION, (__u32)pid_tgid);
	if (!r)
		return 0;
	r->tgid = pid_tgid >> 32;
	if (read_user_string(r->tenant, ATTRIB_MAX_TENANT, tenant)) {
		r->tenant_truncated = 1;
		count_error(ATTRIB_ERR_TENANT_TOO_LONG);
	}
	if (read_user_string(r->cache, ATTRIB_MAX_NAME, cache)) {
		r->name_truncated = 1;
		count_error(ATTRIB_ERR_NAME_TOO_LONG);
	}
	r->action = action;
	r->count = count;
	r->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, submit_flags(sizeof(*r)));
	return 0;
}

SEC("usdt")
int BPF_USDT(token, __u64 request_id, __u64 index)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct attrib_request *req = find_request(pid_tgid >> 32, request_id);
	__u64 now;

	if (!req) {
		count_error(ATTRIB_ERR_UNKNOWN_REQUEST);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (!req->first_token_ns)
		req->first_token_ns = now;
	req->last_token_ns = now;
	req->tokens += 1;
	return 0;
}

SEC("usdt")
int BPF_USDT(layer_begin, __u64 layer, __u64 batch_size)
{
	struct attrib_task *c = current_context(true);

	if (!c)
		return 0;
	c->layer = layer;
	c->layer_batch = batch_size;
	c->layer_start = bpf_ktime_get_ns();
	return 0;
}

static const struct tailcause_log2_hist zero_hist;

SEC("usdt")
int BPF_USDT(layer_end, __u64 layer, __u64 batch_size)
{
	struct attrib_task *c = current_context(false);
	struct attrib_layer_key key;
	struct tailcause_log2_hist *h;
	__u64 now = bpf_ktime_get_ns();

	if (!c || !c->layer_start || c->layer != layer || c->layer_batch != batch_size) {
		count_error(ATTRIB_ERR_LAYER_END_WITHOUT_BEGIN);
		return 0;
	}
	key.layer = layer > 0xffffffffULL ? 0xffffffffU : (__u32)layer;
	key.batch_size = batch_size > 0xffffffffULL ? 0xffffffffU : (__u32)batch_size;
	h = lookup_or_insert(&attrib_layers, &key, &zero_hist, &attrib_events_lost,
			     ATTRIB_LOST_DROPPED);
	if (h)
		log2_hist_add(h, now - c->layer_start);
	c->layer_start = 0;
	return 0;
}

SEC("usdt")
int BPF_USDT(output_quality, __u64 request_id, __u64 entropy_micro)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct attrib_quality_record *r = bpf_ringbuf_reserve(&attrib_events, sizeof(*r), 0);
	struct attrib_anomaly *process;
	struct attrib_task *c;

	if (!r) {
		count_lost();
		return 0;
	}
	r->hdr.type = ATTRIB_REC_QUALITY;
	r->hdr.tid = (__u32)pid_tgid;
	identity_of(&r->id, tgid, request_id);
	r->entropy_micro = entropy_micro;
	r->time_ns = bpf_ktime_get_ns();
	/* The last anomalies, for user space to join a quality drop to a stall nearby in time. */
	c = current_context(false);
	if (c)
		r->thread_anomaly = c->anomaly;
	else
		__builtin_memset(&r->thread_anomaly, 0, sizeof(r->thread_anomaly));
	process = bpf_map_lookup_elem(&attrib_anomalies, &tgid);
	if (process)
		r->process_anomaly = *process;
	else
		__builtin_memset(&r->process_anomaly, 0, sizeof(r->process_anomaly));
	bpf_ringbuf_submit(r, submit_flags(sizeof(*r)));
	return 0;
}

/* ---- scheduler ----------------------------------------------------------------------- */

SEC("tp_btf/sched_switch")
int BPF_PROG(attrib_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct attrib_task *c;
	__u64 now = 0;

	if (!attrib_active_spans)
		return 0;
	c = spans_in_process(prev->tgid) ? bpf_task_storage_get(&attrib_tasks, prev, 0, 0) : NULL;
	if (c && c->active) {
		now = bpf_ktime_get_ns();
		repair_missed_switch_in(c, prev, now);
		c->clock_offset = rq_clock_offset(prev, now);
		add(c, ATTRIB_ON_CPU, c->last_in, now);
		c->last_in = 0;
		if (c->reclaiming)
			reclaim_on_this_cpu(false, now, BPF_CORE_READ(prev, tgid));
		if (preempt || prev_state == TASK_RUNNING) {
			start_wait(c, prev, now);
		} else {
			c->off_ts = now;
			c->off_peer.family = 0;
			c->off_component = sleep_component(c, prev, prev_state, &c->off_peer);
		}
		mark_state(c, now);
	}
	c = spans_in_process(next->tgid) ? bpf_task_storage_get(&attrib_tasks, next, 0, 0) : NULL;
	if (c && c->active) {
		if (!now)
			now = bpf_ktime_get_ns();
		end_off_cpu(c, next, now);
		mark_state(c, now);
		if (c->reclaiming)
			reclaim_on_this_cpu(true, now, BPF_CORE_READ(next, tgid));
	}
	return 0;
}

/* A wake-up of `p`, in the waker's context. A span thread's sleep ends here: split by the
 * waker's history when the waker is another span thread, by the peer's scheduler clocks when
 * it is a local peer, else kept as the sleep it was; from here the thread waits to run, and
 * the throttle clock of the run queue it slept on is read. The wake-up picks its CPU after
 * this tracepoint: when that is another CPU, sched_migrate_task (below) carries the wait over
 * to the new run queue, so no sched_wakeup program is needed (one program fewer on every
 * wake-up of the node). A thread outside spans woken by a span thread notes its clocks (it
 * may be the peer). */
SEC("tp_btf/sched_waking")
int BPF_PROG(attrib_waking_btf, struct task_struct *p)
{
	struct attrib_task *c;
	__u64 now;

	if (!attrib_active_spans)
		return 0;
	c = spans_in_process(p->tgid) ? bpf_task_storage_get(&attrib_tasks, p, 0, 0) : NULL;
	if (!c || !c->active) {
		note_served(p);
		return 0;
	}
	if (!c->off_ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (!resolve_wait(c, p, now) && !resolve_peer_wait(c, p, now))
		end_sleep(c, now);
	start_wait(c, p, now);
	mark_state(c, now);
	return 0;
}

/* The load balancer moves a runnable thread to another CPU's run queue, or a wake-up places
 * it on another CPU's (after sched_waking, above): a span thread waiting to run, or a server
 * or helper with clocks kept, takes its throttled time so far along and reads the new run
 * queue's throttle clock from here. Threads of processes with neither pay two loads. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(attrib_migrate_btf, struct task_struct *p, int dest_cpu)
{
	struct attrib_served *s;
	struct attrib_task *c;
	struct cfs_rq *to;

	if (!attrib_active_spans)
		return 0;
	c = spans_in_process(p->tgid) ? bpf_task_storage_get(&attrib_tasks, p, 0, 0) : NULL;
	if (c && c->active) {
		if (c->wait_ts && (to = cfs_rq_on(p, dest_cpu))) {
			move_reclaim_clock(c, p, (struct cfs_rq *)c->wait_cfs_rq, dest_cpu,
					   bpf_ktime_get_ns());
			move_throttle_clock(&c->wait_cfs_rq, &c->throttle_snap,
					    &c->throttled_at_wait, &c->throttle_carried, to);
		}
		return 0;
	}
	s = served_in_process(p->tgid) ? bpf_task_storage_get(&attrib_served, p, 0, 0) : NULL;
	if (s && s->snap_ts && (to = cfs_rq_on(p, dest_cpu)))
		move_throttle_clock(&s->cfs_rq, &s->throttle_snap, &s->throttled,
				    &s->moved_throttled, to);
	return 0;
}
