// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Helpers shared by every BPF program of tailcause (BPF side only). */
#ifndef TAILCAUSE_COMMON_BPF_H
#define TAILCAUSE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "hist.h"
#include "maps.bpf.h"

/* Set by the loader before load: true when tenants are told apart by the cgroup v1 cpu
 * controller (hybrid hosts), false when the unified (v2) hierarchy is used. */
const volatile bool cgroup_v1_cpu = false;

/* The id of the cgroup that holds `t`: the kernfs id of its directory, which user space sees
 * as the directory's inode number in the same hierarchy. Works for any task pointer, so both
 * sides of a context switch resolve. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t)
{
	struct css_set *cgroups = BPF_CORE_READ(t, cgroups);

	if (cgroup_v1_cpu) {
		int cpu_id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
		struct cgroup_subsys_state *css = NULL;

		/* subsys[] is indexed by a per-kernel enum value, so compute the slot by hand. */
		bpf_probe_read_kernel(&css, sizeof(css),
				      (void *)cgroups +
					      bpf_core_field_offset(struct css_set, subsys) +
					      cpu_id * sizeof(void *));
		if (!css)
			return 0;
		return BPF_CORE_READ(css, cgroup, kn, id);
	}
	return BPF_CORE_READ(cgroups, dfl_cgrp, kn, id);
}

/* floor(log2(v)), 0 for v <= 1, capped to the histogram's last slot. */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1) {
		r += 1;
	}
	return r < TAILCAUSE_LOG2_SLOTS ? r : TAILCAUSE_LOG2_SLOTS - 1;
}

/* For maps whose values are per-CPU: no atomics needed. */
static __always_inline void log2_hist_add(struct tailcause_log2_hist *h, __u64 v)
{
	__u32 slot = log2_slot(v);

	if (slot < TAILCAUSE_LOG2_SLOTS)
		h->slots[slot]++;
	h->sum += v;
}

/* Convention: a tracepoint handler is defined twice, as SEC("tp_btf/x") named <fn>_btf (cheapest,
 * preferred) and as SEC("raw_tp/x") named <fn>_raw (fallback), both calling one static inline
 * body that reads kernel memory only with BPF_CORE_READ; the loader autoloads one by suffix. */

#endif
