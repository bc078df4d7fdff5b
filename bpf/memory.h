// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Memory family: page-cache misses and major faults per process, shared with user space. */
#ifndef TAILCAUSE_MEMORY_H
#define TAILCAUSE_MEMORY_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* user space; BPF code gets the types from vmlinux.h */
#endif

#define TAILCAUSE_COMM_LEN 16

/* Upper bound of `process_memory` entries; the loader lowers it on hosts with many CPUs so that
 * the preallocated per-CPU values stay within a few MiB. */
#define TAILCAUSE_MEMORY_MAX_PROCESSES 8192

/* One process in one cgroup (a process that moves gets a second entry). */
struct memory_key {
	__u64 cgroup_id; /* kernfs id of the task's cgroup (see task_cgroup_id) */
	__u32 tgid;
	__u32 pad;
};

/* Per-CPU counts of one process; user space sums the CPUs. */
struct memory_value {
	__u64 page_cache_misses; /* pages added to the page cache by reads and faults */
	__u64 major_faults;
	__u64 comm_ns; /* when `comm` was last written (picks the freshest CPU copy) */
	char comm[TAILCAUSE_COMM_LEN]; /* the process's (group leader's) name */
};

/* Memory cgroups whose limit reclaim is timed (memcg_reclaim); more are dropped and counted. */
#define TAILCAUSE_MEMCG_MAX 4096

/* Per-CPU totals of the reclaim one memory cgroup's tasks did because a limit was reached (the
 * kernel's mm_vmscan_memcg_reclaim_begin/end, in the charging task). */
struct memcg_reclaim {
	__u64 reclaim_ns;      /* time spent reclaiming */
	__u64 reclaimed_pages; /* pages the reclaim freed */
	__u64 reclaims;	       /* reclaim passes */
};

#endif
