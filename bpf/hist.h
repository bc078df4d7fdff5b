// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* In-kernel histogram layouts shared by BPF programs and user space (C, __u64 only). */
#ifndef TAILCAUSE_HIST_H
#define TAILCAUSE_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* user space; BPF code gets the types from vmlinux.h */
#endif

/* log2 histogram: slot i counts values v with floor(log2(v)) == i (slot 0 also holds 0).
 * 40 slots cover nanoseconds up to ~18 minutes. */
#define TAILCAUSE_LOG2_SLOTS 40

struct tailcause_log2_hist {
	__u64 slots[TAILCAUSE_LOG2_SLOTS];
	__u64 sum; /* sum of the observed values, in the histogram's unit */
};

/* Linear histogram for small integers (run-queue length): slot v counts value v,
 * the last slot counts everything at or above it. */
#define TAILCAUSE_LINEAR_SLOTS 33

struct tailcause_linear_hist {
	__u64 slots[TAILCAUSE_LINEAR_SLOTS];
	__u64 sum;
};

#endif
