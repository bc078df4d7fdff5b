// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Scheduler probe family: run-queue latency, off-CPU time by state, who preempted whom (all per
 * cgroup), and the sampled run-queue length per CPU.
 *
 * Design: docs/architecture.md, "The scheduler family". */
#include "common.bpf.h"
#include "sched.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Written by user space through the skeleton's .bss while some cgroup is being throttled (it
 * then also raises the perf sampler's rate from sparse to dense). */
volatile __u32 runqlen_dense = 0;

/* What the scheduler last did to a task, until it runs again. */
struct sched_task_state {
	__u64 off_ts;	    /* switched out asleep at (0: not asleep) */
	__u64 runnable_ts;  /* became runnable at: wakeup or preemption (0: not runnable) */
	__u64 preempted_by; /* cgroup id of the task that preempted it (0: not preempted) */
	__u32 off_state;    /* SCHED_OFFCPU_IO or SCHED_OFFCPU_SLEEP, meaningful with off_ts */
	__u32 throttled;    /* switched out at its cgroup's CPU quota: no neighbour's doing */
};

/* Per-task state on the tp_btf path: lives and dies with the task, no bound needed.
 * Written by the sched_switch/wakeup handlers; never read by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sched_task_state);
} sched_task_store SEC(".maps");

/* Per-task state on the raw_tp fallback: key tid, LRU so that a full map forgets the oldest
 * sleeper instead of refusing new tasks; entries are deleted at sched_process_exit.
 * Not created on the tp_btf path. Never read by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SCHED_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct sched_task_state);
} sched_task_hash SEC(".maps");

/* Key: cgroup id (task_cgroup_id()), value: per-CPU run-queue latency histogram and off-CPU
 * nanoseconds by state. Read and summed over CPUs by SchedProbe::collect(), which deletes the
 * entries of removed cgroups. Full: the update is dropped and counted in sched_events_lost.
 * Not preallocated: 1024 entries x 352 bytes x every possible CPU would reserve tens of MB on
 * big hosts; entries are only created for a cgroup's first switch-in. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SCHED_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct sched_cgroup_stats);
} sched_cgroup_stats SEC(".maps");

/* Key: (waiting cgroup, neighbour cgroup), value: per-CPU count of the neighbour's preemptions
 * and the run-queue wait charged to it (see the top of this file). Read by
 * SchedProbe::collect(). Full: dropped and counted. Not preallocated, as above. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SCHED_MAX_PAIRS);
	__type(key, struct sched_pair_key);
	__type(value, struct sched_pair_stats);
} sched_preemptions SEC(".maps");

/* Who held a CPU lately: the runs of its last SCHED_OCCUPANT_RUNS occupants (merged while one
 * cgroup keeps the CPU), and the one running now. A task's run-queue wait is charged to the
 * cgroup with the largest share of the wait among these runs. Index 0, per CPU; written on
 * every switch of that CPU, never read by user space. */
#define SCHED_OCCUPANT_RUNS 8
struct sched_occupant_run {
	__u64 cgroup;
	__u64 start, end;
};
struct sched_occupancy {
	__u64 cgroup; /* of the task running now (0: idle) ... */
	__u64 since;  /* ... since then */
	__u32 next;   /* slot the next finished run goes to */
	__u32 pad;
	struct sched_occupant_run runs[SCHED_OCCUPANT_RUNS];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sched_occupancy);
} sched_occupancy SEC(".maps");

/* Index 0, per CPU: that CPU's sampled run-queue length. Read by SchedProbe::collect(). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sched_runqlen);
} sched_runqlen SEC(".maps");

/* Index 0, per CPU: updates dropped because a map was full or task storage failed.
 * Exported as tailcause_events_lost_total{source="sched"}. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sched_events_lost SEC(".maps");

/* Weak: sample_runqlen_ksym is only loaded when the kernel has it (BTF and kallsyms). */
extern const struct rq runqueues __ksym __weak;

static const struct sched_task_state zero_task;
static const struct sched_cgroup_stats zero_stats;
static const struct sched_pair_stats zero_pair;

/* `btf` is a compile-time constant in every caller: on the tp_btf path task pointers are
 * trusted BTF pointers and read directly (cheap loads); on raw_tp they need probe reads. */
static __always_inline __u32 task_tid(struct task_struct *t, bool btf)
{
	return btf ? t->pid : BPF_CORE_READ(t, pid);
}

/* task_cgroup_id() with direct loads, for BTF pointers; same ids, same v1/v2 choice. */
static __always_inline __u64 task_cgroup_id_direct(struct task_struct *t)
{
	struct css_set *cgroups = t->cgroups;

	if (cgroup_v1_cpu) {
		struct cgroup_subsys_state *css =
			cgroups->subsys[bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id)];

		if (!css)
			return 0;
		return css->cgroup->kn->id;
	}
	return cgroups->dfl_cgrp->kn->id;
}

static __always_inline __u64 task_cgroup(struct task_struct *t, bool btf)
{
	return btf ? task_cgroup_id_direct(t) : task_cgroup_id(t);
}

static __always_inline struct sched_task_state *task_state(struct task_struct *t, __u32 tid,
							   bool btf, bool create)
{
	struct sched_task_state *st;

	if (btf) {
		st = bpf_task_storage_get(&sched_task_store, t, 0,
					  create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
		if (!st && create)
			count_in(&sched_events_lost, 0);
		return st;
	}
	if (create)
		return lookup_or_insert(&sched_task_hash, &tid, &zero_task, &sched_events_lost, 0);
	return bpf_map_lookup_elem(&sched_task_hash, &tid);
}

/* Remember when a task became runnable. A task woken while still running (between setting its
 * sleep state and switching out) gets a start too, which its switch-out then replaces or
 * clears. */
static __always_inline void on_wakeup(struct task_struct *p, bool btf)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the lookups below take time too */
	__u32 tid = task_tid(p, btf);
	struct sched_task_state *st;

	if (!tid)
		return;
	st = task_state(p, tid, btf, true);
	/* Keep an earlier start: a task preempted while going to sleep is already waiting. */
	if (st && !st->runnable_ts)
		st->runnable_ts = now;
}

/* Whether t's CFS run queue, or one above it, is throttled by its cgroup's CPU quota (needs
 * CONFIG_CFS_BANDWIDTH; false without it). */
static __always_inline bool task_throttled(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(struct sched_entity, cfs_rq) ||
	    !bpf_core_field_exists(struct cfs_rq, throttle_count))
		return false;
	if (btf) {
		struct cfs_rq *cfs = t->se.cfs_rq;

		return cfs && cfs->throttle_count > 0;
	}
	return BPF_CORE_READ(t, se.cfs_rq, throttle_count) > 0;
}

/* The occupant that ran on this CPU until `now` leaves it: its run joins the recent runs,
 * extending the newest one when the same cgroup kept the CPU (two hog threads taking turns). */
static __always_inline void occupancy_close(struct sched_occupancy *o, __u64 now)
{
	struct sched_occupant_run *last;
	__u32 slot;

	if (!o->cgroup || !o->since || now <= o->since)
		return;
	last = &o->runs[(o->next - 1) & (SCHED_OCCUPANT_RUNS - 1)];
	if (last->cgroup == o->cgroup && last->end == o->since) {
		last->end = now;
		return;
	}
	slot = o->next & (SCHED_OCCUPANT_RUNS - 1);
	o->runs[slot].cgroup = o->cgroup;
	o->runs[slot].start = o->since;
	o->runs[slot].end = now;
	o->next = (slot + 1) & (SCHED_OCCUPANT_RUNS - 1);
}

static __always_inline __u64 overlap_ns(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 from = a0 > b0 ? a0 : b0, to = a1 < b1 ? a1 : b1;

	return to > from ? to - from : 0;
}

/* The cgroup whose recent runs on this CPU cover most of [since, now]; 0 when none does (the
 * CPU was idle, or the wait began before the runs it remembers). */
static __always_inline __u64 occupant_of(const struct sched_occupancy *o, __u64 since, __u64 now)
{
	const struct sched_occupant_run *last = &o->runs[(o->next - 1) & (SCHED_OCCUPANT_RUNS - 1)];
	__u64 best = 0, best_ns = 0;
	int i, j;

	/* The common case, and the cheap one: the run that just ended covers the whole wait. */
	if (last->cgroup && last->start <= since && last->end >= now)
		return last->cgroup;
	for (i = 0; i < SCHED_OCCUPANT_RUNS; i++) {
		__u64 cgroup = o->runs[i].cgroup, ns = 0;

		if (!cgroup || o->runs[i].end <= since)
			continue;
		for (j = 0; j < SCHED_OCCUPANT_RUNS; j++) {
			if (o->runs[j].cgroup == cgroup)
				ns += overlap_ns(o->runs[j].start, o->runs[j].end, since, now);
		}
		if (ns > best_ns) {
			best_ns = ns;
			best = cgroup;
		}
	}
	return best;
}

/* The pair's counters: a cgroup behind its own tasks in its stats entry (NULL with it), any
 * other pair in sched_preemptions. */
static __always_inline struct sched_pair_stats *pair_stats(struct sched_cgroup_stats *stats,
							   __u64 cgroup, __u64 by_cgroup)
{
	struct sched_pair_key key = {.cgroup = cgroup, .by_cgroup = by_cgroup};

	if (by_cgroup == cgroup)
		return stats ? &stats->self : NULL;
	return lookup_or_insert(&sched_preemptions, &key, &zero_pair, &sched_events_lost, 0);
}

/* `next` runs now: account its wait per cgroup and, as a pair, to the neighbour it waited
 * behind: the cgroup that held this CPU longest meanwhile, else the one that preempted it. A
 * preemption is counted for the cgroup that took the CPU. A wait that began with the task's own
 * cgroup throttled is its quota's doing and goes to no pair. */
static __always_inline void on_switch_in(struct sched_task_state *st, __u64 since, __u64 cgroup,
					 __u64 now, const struct sched_occupancy *occ)
{
	__u64 wait = now > since ? now - since : 0, by;
	struct sched_cgroup_stats *stats =
		lookup_or_insert(&sched_cgroup_stats, &cgroup, &zero_stats, &sched_events_lost, 0);
	struct sched_pair_stats *pair;

	if (stats) {
		/* Run-queue seconds are the histogram's sum: offcpu_ns[RUNQUEUE] stays 0. */
		log2_hist_add(&stats->runq_latency, wait);
		if (st && st->off_ts && st->off_ts < since) {
			if (st->off_state == SCHED_OFFCPU_IO)
				stats->offcpu_ns[SCHED_OFFCPU_IO] += since - st->off_ts;
			else
				stats->offcpu_ns[SCHED_OFFCPU_SLEEP] += since - st->off_ts;
		}
	}
	if (!st || !st->runnable_ts || st->throttled)
		return;
	if (st->preempted_by) {
		pair = pair_stats(stats, cgroup, st->preempted_by);
		if (pair)
			pair->preemptions += 1;
	}
	by = occ ? occupant_of(occ, since, now) : 0;
	if (!by)
		by = st->preempted_by;
	if (!by || !wait)
		return;
	pair = pair_stats(stats, cgroup, by);
	if (pair)
		pair->wait_ns += wait;
}

static __always_inline void on_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state, bool btf)
{
	__u64 now = bpf_ktime_get_ns(); /* first, as in on_wakeup() */
	__u32 prev_tid = task_tid(prev, btf), next_tid = task_tid(next, btf), zero = 0;
	__u64 next_cgroup = 0;
	struct sched_occupancy *occ = bpf_map_lookup_elem(&sched_occupancy, &zero);
	struct sched_task_state *st;

	/* prev's run ends now: part of what next may have waited behind. */
	if (occ)
		occupancy_close(occ, now);
	/* tid 0 is a CPU's idle task: it neither waits nor preempts anybody. */
	if (next_tid) {
		next_cgroup = task_cgroup(next, btf);
		st = task_state(next, next_tid, btf, false);
		/* No start seen (it became runnable before we attached): not counted. */
		if (st && st->runnable_ts)
			on_switch_in(st, st->runnable_ts, next_cgroup, now, occ);
		if (st) {
			st->runnable_ts = 0;
			st->preempted_by = 0; /* or a later wake-up would count it again */
			st->throttled = 0;
			st->off_ts = 0;
		}
	}
	if (occ) {
		occ->cgroup = next_cgroup;
		occ->since = now;
	}
	if (!prev_tid)
		return;
	st = task_state(prev, prev_tid, btf, true);
	if (!st)
		return;
	if (preempt || prev_state == TASK_RUNNING) {
		/* Still runnable: it waits in the run queue from now on. */
		st->runnable_ts = now;
		st->off_ts = 0;
		st->throttled = task_throttled(prev, btf);
		st->preempted_by = next_tid && !st->throttled ? next_cgroup : 0;
	} else {
		st->off_ts = now;
		st->off_state = (prev_state & TASK_UNINTERRUPTIBLE) && !(prev_state & TASK_NOLOAD)
					? SCHED_OFFCPU_IO
					: SCHED_OFFCPU_SLEEP;
		st->runnable_ts = 0;
		st->preempted_by = 0; /* a wakeup handler may set runnable_ts later */
		st->throttled = 0;
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_wakeup_btf, struct task_struct *p)
{
	on_wakeup(p, true);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(handle_wakeup_raw, struct task_struct *p)
{
	on_wakeup(p, false);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_wakeup_new_btf, struct task_struct *p)
{
	on_wakeup(p, true);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(handle_wakeup_new_raw, struct task_struct *p)
{
	on_wakeup(p, false);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state, true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(handle_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state, false);
	return 0;
}

/* Only the raw_tp path keeps per-task state in a hash; task storage frees itself. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(handle_exit_raw)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&sched_task_hash, &tid);
	return 0;
}

/* Records one run-queue length sample of the CPU it runs on; dense samples (a cgroup is
 * throttled) have a histogram of their own, so the depth while throttled is read apart from
 * the rest. */
static __always_inline void record_runqlen(const struct rq *rq)
{
	__u32 zero = 0;
	struct sched_runqlen *r = bpf_map_lookup_elem(&sched_runqlen, &zero);
	struct tailcause_linear_hist *h;
	__u64 len;

	if (!r || !rq)
		return;
	h = runqlen_dense ? &r->throttled : &r->hist;
	len = rq->nr_running;
	h->slots[len < TAILCAUSE_LINEAR_SLOTS ? len : TAILCAUSE_LINEAR_SLOTS - 1] += 1;
	h->sum += len;
}

/* Software cpu-clock event, one per CPU at the sparse or dense rate; runs on the sampled CPU.
 * Preferred flavour: the per-CPU `runqueues`, which needs the symbol in kallsyms
 * (CONFIG_KALLSYMS_ALL). */
SEC("perf_event")
int sample_runqlen_ksym(struct bpf_perf_event_data *ctx)
{
	record_runqlen(bpf_this_cpu_ptr(&runqueues));
	return 0;
}

/* Fallback flavour: the run queue the current task (or the idle task) is on, reached through
 * its CFS run queue (CONFIG_FAIR_GROUP_SCHED, which cgroup CPU control needs anyway). */
SEC("perf_event")
int sample_runqlen_task(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if (bpf_core_field_exists(struct cfs_rq, rq))
		record_runqlen(t->se.cfs_rq->rq);
	return 0;
}
