// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Block family: request latency and bytes per disk and operation, and per issuing cgroup,
 * shared with user space. */
#ifndef TAILCAUSE_BLOCK_H
#define TAILCAUSE_BLOCK_H

#include "hist.h"

/* Operations as exported in the `op` label (REQ_OP_* folded to five values). */
#define TAILCAUSE_BLOCK_OP_READ	   0
#define TAILCAUSE_BLOCK_OP_WRITE   1
#define TAILCAUSE_BLOCK_OP_FLUSH   2
#define TAILCAUSE_BLOCK_OP_DISCARD 3
#define TAILCAUSE_BLOCK_OP_OTHER   4
#define TAILCAUSE_BLOCK_OPS	   5

/* A whole disk (gendisk major, first_minor) and an operation. */
struct block_key {
	__u32 major;
	__u32 minor;
	__u32 op; /* TAILCAUSE_BLOCK_OP_* */
	__u32 pad;
};

/* Per-CPU: issue -> complete latency in ns and the bytes completed. */
struct block_value {
	struct tailcause_log2_hist latency_ns;
	__u64 bytes;
};

/* The I/O a cgroup's tasks issued to a whole disk: who kept the disk busy, for the verdicts. */
struct block_cgroup_key {
	__u64 cgroup; /* the issuing task's (task_cgroup_id) */
	__u32 major;
	__u32 minor;
};

/* Per-CPU, cumulative: requests completed, their bytes and their time from issue to completion
 * (summed, so requests in flight together each count). */
struct block_cgroup_value {
	__u64 requests;
	__u64 bytes;
	__u64 busy_ns;
};

#endif
