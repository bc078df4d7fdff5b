// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: the per-thread context, the maps, counters and small helpers
 * every attrib program uses. Included once, by attrib.bpf.c. */
#ifndef TAILCAUSE_ATTRIB_CONTEXT_BPF_H
#define TAILCAUSE_ATTRIB_CONTEXT_BPF_H

#include "common.bpf.h"
#include "attrib.h"
#include "ringbuf_wakeup.bpf.h"

/* Set by the loader. Records are submitted without waking the reader; the one that makes the
 * backlog cross this many bytes wakes it (it also drains every tick). See submit_flags(). */
const volatile __u64 wakeup_bytes = ATTRIB_RINGBUF_BYTES / ATTRIB_RINGBUF_WAKEUP_DIVISOR;
/* A run-queue wait, throttled stretch or block-I/O sleep this long or longer is a kernel
 * anomaly: its end is stamped on the thread and its process (see note_anomaly()). */
const volatile __u64 anomaly_min_ns = 1000000;
/* Report exec'd processes (auto-discovery of USDT binaries); off when narrowed by pid/binary. */
const volatile bool report_exec = true;

/* Spans in progress on the whole node. While zero (no agent stage in flight) the scheduler and
 * memory handlers return after this one load. Changed with atomics on the USDT path only. */
__s64 attrib_active_spans = 0;

/* The same per process, in slots by tgid (processes whose tgids differ by a multiple of the
 * slot count share one). The scheduler handlers look up a task's context only when its
 * process's slot holds a span: threads of processes without spans pay one load, no storage
 * lookup (the sched family gives every task a storage, so the lookup itself would walk it). */
__s32 attrib_spans_by_process[ATTRIB_PROCESS_SLOTS];

/* Processes with a thread that a span's request reached (attrib_served), in the same slots.
 * Set at the first such thread and never cleared: a served thread keeps its clocks for the
 * next request, and a slot that stays set only costs its processes their lookups. */
__u8 attrib_served_processes[ATTRIB_PROCESS_SLOTS];

static __always_inline __u32 process_slot(__u32 tgid)
{
	return tgid & (ATTRIB_PROCESS_SLOTS - 1);
}

/* A thread of this process may be in a span (exact when false). */
static __always_inline bool spans_in_process(__u32 tgid)
{
	return attrib_spans_by_process[process_slot(tgid)] != 0;
}

/* A thread of this process may keep served clocks (exact when false). */
static __always_inline bool served_in_process(__u32 tgid)
{
	return attrib_served_processes[process_slot(tgid)] != 0;
}

/* Before a thread of this process gets served clocks. Written once: the slot's cache line is
 * read on every wake-up of the node. */
static __always_inline void mark_served(__u32 tgid)
{
	__u32 slot = process_slot(tgid);

	if (!attrib_served_processes[slot])
		attrib_served_processes[slot] = 1;
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* A span of the current thread starts (1) or ends (-1): counted on the node and on its
 * process before it is published, retired after it ends, so no gate ever hides a live span. */
static __always_inline void count_span(int delta)
{
	__sync_fetch_and_add(&attrib_active_spans, delta);
	__sync_fetch_and_add(&attrib_spans_by_process[process_slot(current_tgid())], delta);
}

/* A span thread's cumulative components at one of its state changes (critical path). */
struct attrib_mark {
	__u64 ts; /* 0: empty slot */
	__u64 cum[ATTRIB_KERNEL_COMPONENTS];
};

/* The per-thread context. */
struct attrib_task {
	struct attrib_identity id; /* who the current span works for */
	struct attrib_span span;   /* the current stage or worker span */
	__s64 begin_kind;	   /* stage kind as passed to stage_begin, to match stage_end */
	__u64 attached_request;	   /* context_attach'ed request (0: none): worker spans resume */
	__u32 active;		   /* a span is in progress */
	__u32 off_component;	   /* why it sleeps, while off_ts is set */
	__u64 last_in;		   /* on CPU since (0: not on CPU) */
	__u64 off_ts;		   /* asleep since (0: not asleep) */
	__u64 wait_ts;		   /* runnable and waiting since (0: not waiting) */
	__u64 wait_cfs_rq;	   /* the CFS run queue whose throttle clock was sampled */
	__u64 throttle_snap;	   /* that run queue's cumulative throttled time at wait_ts */
	__u64 throttle_carried;	   /* throttled time on run queues it left during the wait */
	__u64 reclaim_snap;	   /* its process's reclaim clock on its CPU at wait_ts */
	__u64 reclaim_carried;	   /* reclaim run on the CPUs it left during the wait */
	__u32 throttled_at_wait;   /* fallback: its hierarchy was throttled at wait_ts */
	__u32 gpu_wait;		   /* set by GPU-sync uprobe recipes: sleeps count as gpu */
	__s64 clock_offset;	   /* ktime minus the rq clock, sampled at its last switch-out */
	__u64 rchar_start;	   /* the thread's read(2)-family byte count at span start */
	__u64 layer_start;	   /* layer_begin time (0: none) */
	__u64 layer;
	__u64 layer_batch;
	__u64 thread_request; /* request_begin'ed on this thread and not yet ended (0: none) */
	__u32 recipe_depth;   /* nested calls of span recipes in progress (recursion) */
	__u32 reclaiming;     /* in direct or memory-cgroup reclaim: its CPU time is block_io */
	__u64 recipe_sp;      /* user stack pointer at the outermost span recipe call's entry */
	__u64 gpu_sp;	      /* the same for the outermost GPU-sync call */
	struct attrib_anomaly anomaly; /* the thread's last kernel anomaly (kept across spans) */
	struct attrib_peer off_peer;   /* the socket peer of the current sleep (family 0: none) */
	struct attrib_peer peers[ATTRIB_PEER_SLOTS]; /* the span's peers, with their network wait */
	/* Critical path (attrib_critpath.bpf.h): the components of the thread's ended spans,
	 * summed (its cumulative time is this plus the current span's components), and a ring of
	 * its last state changes with that cumulative time, read by the threads it wakes. */
	__u64 cum_base[ATTRIB_KERNEL_COMPONENTS];
	struct attrib_mark history[ATTRIB_HISTORY_LEVELS][ATTRIB_HISTORY];
	__u32 history_next[ATTRIB_HISTORY_LEVELS]; /* next slot per level (mod ATTRIB_HISTORY) */
	__u32 pad3;
};

/* Per-thread context: lives and dies with the thread (no bound needed). Created by the USDT
 * handlers, read by every handler here; never read by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct attrib_task);
} attrib_tasks SEC(".maps");

/* A thread outside spans that a span thread woke from a system call (a local server the span's
 * request reached), or that such a thread handed the request on to: its scheduler clocks at a
 * snapshot, so that when it wakes that span thread from a network wait (its answer) its
 * run-queue and throttled time (and the chain's before it) become the wait's cause
 * (attrib_critpath.bpf.h). */
struct attrib_served {
	__u64 snap_ts;		 /* when the clocks below were read */
	__u64 run_delay;	 /* its sched_info.run_delay then */
	__u64 cfs_rq;		 /* its CFS run queue then */
	__u64 throttle_snap;	 /* that run queue's cumulative throttled time then */
	__u64 carried_queued;	 /* run-queue time of the threads before it in the chain */
	__u64 carried_throttled; /* ... of which throttled */
	__u64 moved_throttled;	 /* its own throttled time on run queues it left since then */
	__u32 client_tid;	 /* the span thread whose request it serves (or served last) */
	__u32 throttled;	 /* its hierarchy was throttled then (when it moved CPUs since) */
};

/* Per-thread, created at the first such wake-up; lives and dies with the thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct attrib_served);
} attrib_served SEC(".maps");

/* Key: {tgid, request id}; value: the request's identity, token times and current stage.
 * Inserted at request_begin, deleted at request_end; entries of exited processes are deleted by
 * user space (AttribProbe, on a PROCESS_EXIT record and periodically). Full: the request is
 * dropped and counted in attrib_events_lost. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ATTRIB_MAX_REQUESTS);
	__type(key, struct attrib_request_key);
	__type(value, struct attrib_request);
} attrib_requests SEC(".maps");

/* Key: tgid of a process that began requests, or ran a recipe span outside one (user space
 * groups those into requests and ends its last one at the exit); value: unused. Lets
 * sched_process_exit tell user space which exits leave requests to clean up. Deleted at that
 * exit. Full: the process is not marked and its leftovers wait for the periodic clean-up. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ATTRIB_MAX_PROCESSES);
	__type(key, __u32);
	__type(value, __u8);
} attrib_processes SEC(".maps");

/* Key: tgid; value: the process's last kernel anomaly (any of its threads in a span), so a
 * quality sample can be joined to a stall of another thread of the same process. Written by the
 * scheduler and fault handlers on an anomaly (rare: each is >= anomaly_min_ns or a major
 * fault), read by output_quality; never read by user space. LRU: the processes that have not
 * had an anomaly for the longest are evicted, never an error; exited processes age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ATTRIB_MAX_ANOMALY_PROCESSES);
	__type(key, __u32);
	__type(value, struct attrib_anomaly);
} attrib_anomalies SEC(".maps");

/* Key: {layer, batch size}; value: per-CPU log2 histogram of layer time in ns. Read by
 * AttribProbe::collect(). Full: dropped and counted. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, ATTRIB_MAX_LAYERS);
	__type(key, struct attrib_layer_key);
	__type(value, struct tailcause_log2_hist);
} attrib_layers SEC(".maps");

/* Finished stages, requests, cache lookups, quality samples, execs and exits, consumed by
 * AttribProbe::consume(). Full: the record is dropped and counted. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ATTRIB_RINGBUF_BYTES);
} attrib_events SEC(".maps");

/* Index: enum attrib_sdk_error; per-CPU counts of bad SDK input, read by collect(). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTRIB_KERNEL_ERRORS);
	__type(key, __u32);
	__type(value, __u64);
} attrib_sdk_errors SEC(".maps");

/* Per CPU, index ATTRIB_LOST_DROPPED: events dropped (ring buffer or map full, task storage
 * refused), exported as tailcause_events_lost_total{source="attrib"}; ATTRIB_LOST_SWITCHES:
 * switch-ins the kernel did not report and that were recovered, exported as
 * tailcause_attrib_missed_switches_total. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTRIB_LOST_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} attrib_events_lost SEC(".maps");

/* Index ATTRIB_CRIT_*, per CPU: wake-up edges that split a span's wait by its waker's history,
 * read by tests (and the overhead bench) through the skeleton. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTRIB_CRIT_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} attrib_critpath SEC(".maps");

/* Index 0, per CPU: scratch space to build a request before inserting it (too big for the
 * stack). Never read by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct attrib_request);
} attrib_scratch SEC(".maps");

/* Index: recipe index (the uprobes' BPF cookie); value: what the recipe does. Written by
 * AttribProbe::start() before attaching, read by the recipe uprobes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ATTRIB_MAX_RECIPES);
	__type(key, __u32);
	__type(value, struct attrib_recipe);
} attrib_recipes SEC(".maps");

/* Index: recipe index; per-CPU count of calls of the recipe's symbol (outermost and nested),
 * read by collect() as tailcause_recipe_calls_total. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTRIB_MAX_RECIPES);
	__type(key, __u32);
	__type(value, __u64);
} attrib_recipe_calls SEC(".maps");

/* Per recipe (index = cookie): spans its calls produced (outermost calls that returned),
 * read by collect() as tailcause_recipe_spans_total. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTRIB_MAX_RECIPES);
	__type(key, __u32);
	__type(value, __u64);
} attrib_recipe_spans SEC(".maps");

/* Bad SDK input of `kind` (enum attrib_sdk_error), counted. */
static __always_inline void count_error(__u32 kind)
{
	count_in(&attrib_sdk_errors, kind);
}

/* An event dropped (ring buffer or map full, task storage refused), counted. */
static __always_inline void count_lost(void)
{
	count_in(&attrib_events_lost, ATTRIB_LOST_DROPPED);
}

/* When the reader was last woken because the backlog stood over wakeup_bytes. */
__u64 attrib_backlog_wakeup_ns = 0;

/* Flags to submit a reserved record of `size` bytes to attrib_events with (4 MiB is 10 ms at
 * a million stage records a second, so the reader is woken well before its tick). */
static __always_inline __u64 submit_flags(__u64 size)
{
	return backlog_submit_flags(&attrib_events, size, wakeup_bytes, &attrib_backlog_wakeup_ns);
}

static __always_inline struct attrib_task *current_context(bool create)
{
	struct attrib_task *c = bpf_task_storage_get(&attrib_tasks, bpf_get_current_task_btf(), 0,
						     create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);

	if (!c && create)
		count_lost();
	return c;
}

static __always_inline struct attrib_request *find_request(__u32 tgid, __u64 request_id)
{
	struct attrib_request_key key = {.tgid = tgid, .request_id = request_id};

	return bpf_map_lookup_elem(&attrib_requests, &key);
}

/* Reads a user string of at most `max` bytes into `dst` (which holds max + 2); true when it was
 * longer (then it is cut at max). NULL reads as the empty string; so does a string that cannot
 * be read (bad pointer, or a page not present), which is counted: its label would be wrong. */
static __always_inline bool read_user_string(char *dst, __u32 max, const char *src)
{
	long n = src ? bpf_probe_read_user_str(dst, max + 2, src) : -1;

	if (n < 0) {
		dst[0] = 0;
		if (src)
			count_error(ATTRIB_ERR_UNREADABLE_STRING);
		return false;
	}
	if (n == max + 2) {
		dst[max] = 0;
		return true;
	}
	return false;
}

static __always_inline void unknown_identity(struct attrib_identity *id, __u32 tgid,
					     __u64 request_id)
{
	__builtin_memset(id, 0, sizeof(*id));
	id->request_id = request_id;
	id->tgid = tgid;
	id->flags = ATTRIB_ID_NO_REQUEST;
}

#endif
