// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Block family: request latency and bytes per disk and operation, shared with user space. */
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

#endif
