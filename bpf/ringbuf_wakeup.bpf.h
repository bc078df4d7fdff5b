// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* When a BPF program wakes the ring buffer's reader (BPF side only). */
#ifndef TAILCAUSE_RINGBUF_WAKEUP_BPF_H
#define TAILCAUSE_RINGBUF_WAKEUP_BPF_H

#include <bpf/bpf_helpers.h>

/* While the backlog stays over the line, the reader is woken again this often at most. */
#define RINGBUF_REWAKE_NS 1000000

/* Flags to submit a reserved record of `size` bytes to `ring` with: wake the reader when this
 * record makes the backlog cross `wakeup_bytes`, and again every RINGBUF_REWAKE_NS while the
 * backlog stays over it; else no wake-up, and the reader drains the ring at its tick (every
 * 100 ms in the daemon). A wake-up is an irq_work (a self-IPI, a VM exit on guests) and a
 * context switch to the reader: one per record costs more than the record (the default flags
 * wake whenever the reader has caught up, i.e. nearly always at a low rate). The repeat is
 * needed because the crossing can go unseen: two CPUs reserve records on either side of the
 * line before either queries the backlog, and both then find it already crossed; the reader
 * would sleep to its tick while the ring fills. `*last_wakeup_ns` is shared by all CPUs
 * without atomics: a race costs one extra wake-up. */
static __always_inline __u64 backlog_submit_flags(void *ring, __u64 size, __u64 wakeup_bytes,
						  __u64 *last_wakeup_ns)
{
	__u64 backlog = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	__u64 before = backlog > size + 8 ? backlog - size - 8 : 0; /* 8: the record header */
	__u64 now;

	if (backlog < wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	now = bpf_ktime_get_ns();
	if (before >= wakeup_bytes && now - *last_wakeup_ns < RINGBUF_REWAKE_NS)
		return BPF_RB_NO_WAKEUP;
	*last_wakeup_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

#endif
