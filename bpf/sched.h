// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Scheduler probe family: values shared by bpf/sched.bpf.c and src/probes/sched_probe.cpp
 * (C, __u32/__u64 only). */
#ifndef TAILCAUSE_SCHED_H
#define TAILCAUSE_SCHED_H

#include "hist.h"

/* Bounds of the in-kernel maps (see the map declarations in sched.bpf.c). */
#define SCHED_MAX_CGROUPS 1024
#define SCHED_MAX_PAIRS	  4096
#define SCHED_MAX_TASKS	  32768 /* raw_tp fallback only: per-task state keyed by tid */

/* Why a task was off CPU; index into sched_cgroup_stats.offcpu_ns. */
enum sched_offcpu_state {
	SCHED_OFFCPU_RUNQUEUE = 0, /* runnable, waiting for a CPU */
	SCHED_OFFCPU_IO = 1,	   /* TASK_UNINTERRUPTIBLE (not TASK_IDLE) */
	SCHED_OFFCPU_SLEEP = 2,	   /* any other voluntary sleep */
	SCHED_OFFCPU_STATES = 3,
};

/* A task of `cgroup` waited for a CPU that tasks of `by_cgroup` held (see sched.bpf.c). */
struct sched_pair_key {
	__u64 cgroup;
	__u64 by_cgroup;
};

struct sched_pair_stats {
	__u64 preemptions; /* times a runnable task of cgroup was switched out for by_cgroup's */
	__u64 wait_ns;	   /* run-queue wait of cgroup's tasks spent mostly behind by_cgroup's */
};

/* Per cgroup and per CPU: everything a switch-in adds, so that one lookup serves it. */
struct sched_cgroup_stats {
	struct tailcause_log2_hist runq_latency; /* ns from runnable to running */
	/* io and sleep; the RUNQUEUE slot stays 0: run-queue time is runq_latency.sum */
	__u64 offcpu_ns[SCHED_OFFCPU_STATES];
	/* The pair (cgroup, cgroup), a cgroup waiting behind its own tasks: kept here, not in
	 * sched_preemptions, so the commonest switch (one service's threads taking turns) needs
	 * no second hash lookup. User space reads it as that pair. */
	struct sched_pair_stats self;
};

/* Per CPU: the sampled run-queue length of that CPU. */
struct sched_runqlen {
	struct tailcause_linear_hist hist;	/* sparse samples: no cgroup throttled */
	struct tailcause_linear_hist throttled; /* dense samples: while a cgroup is throttled */
};

#endif
