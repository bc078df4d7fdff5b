// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: critical-path attribution of a span's waits.
 *
 * A thread in a span that sleeps in futex() (mutexes, condition variables, joins) or in another
 * voluntary sleep (pipes, eventfd...) and is woken by another span thread from a system call
 * (futex wake, write, exit) waited on that thread. Its wait is then split by what the waker did
 * over the same interval, read from the waker's history: a ring of its state changes, each with
 * its cumulative components. The waker's time on CPU stays the waiter's lock/sleep (it held the
 * lock, or did the work: genuine contention); its run-queue, throttled, block-I/O, network and
 * GPU time become the waiter's. The waker's own waits were resolved the same way when it was
 * woken, so a chain (A waits on B, B on C, C reads a cold file) resolves to C's cause.
 *
 * Only span threads keep a history (state changes they already pay for), so threads outside
 * spans cost nothing more; a wake-up by one of them, by a kernel thread or from an interrupt
 * keeps today's lock/sleep. A thread that left its span keeps its history (helpers often
 * detach before they signal); the time since its span ended is unknown and left out. An interrupt
 * taken while a span thread is inside a system call is not told apart from that thread's own
 * wake-up (no portable interrupt test without CONFIG_KALLSYMS_ALL): rare, and it only moves a wait
 * to that thread's causes. */
#ifndef TAILCAUSE_ATTRIB_CRITPATH_BPF_H
#define TAILCAUSE_ATTRIB_CRITPATH_BPF_H

#include "attrib_span.bpf.h"
#include "syscalls.bpf.h"

/* a * b / d without overflowing 64 bits: past 4 s, in units of 4 us (no loop: the verifier
 * walks every call of it). */
static __always_inline __u64 scale(__u64 a, __u64 b, __u64 d)
{
	if ((a | b) >> 32) {
		a >>= 12;
		b >>= 12;
		d >>= 12;
		if (!d)
			return 0;
		return (a * b / d) << 12;
	}
	return d ? a * b / d : 0;
}

/* The oldest mark of the ring of `level` (NULL: empty). */
static __always_inline struct attrib_mark *oldest_mark(struct attrib_task *w, int level)
{
	__u32 next;

	if (level < 0 || level >= ATTRIB_HISTORY_LEVELS)
		return NULL;
	next = w->history_next[level];
	if (!next)
		return NULL;
	return &w->history[level][next >= ATTRIB_HISTORY ? next & (ATTRIB_HISTORY - 1) : 0];
}

/* What waker `w` did over [from, now], per component, into `split`; its sum (0: no history).
 * Read from the finest ring that reaches back to `from`: its mark at or before `from`,
 * interpolated towards the next newer one (one state between two level-0 marks; a mix, taken
 * as even, between coarser ones). When none reaches back, `partial` is set and the coarsest
 * ring's oldest mark stands for `from`: what it covers stands for the whole wait. */
static __always_inline __u64 waker_split(struct attrib_task *w, __u64 from, __u64 now,
					 __u64 split[ATTRIB_KERNEL_COMPONENTS], bool *partial)
{
	__u64 newer_ts = now, total = 0;
	struct attrib_mark *m = NULL, *newer = NULL, *o;
	int i, k, level = ATTRIB_HISTORY_LEVELS - 1;
	__u32 next;

	for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++)
		split[i] = cum_now(w, i);
	if (w->active && w->last_in && now > w->last_in) /* running since its switch-in */
		split[w->gpu_wait ? ATTRIB_GPU : ATTRIB_ON_CPU] += now - w->last_in;
	for (k = 0; k < ATTRIB_HISTORY_LEVELS; k++) {
		o = oldest_mark(w, k);
		if (o && o->ts && o->ts <= from) {
			level = k;
			break;
		}
	}
	*partial = k == ATTRIB_HISTORY_LEVELS;
	if (level < 0 || level >= ATTRIB_HISTORY_LEVELS)
		return 0;
	next = w->history_next[level];
	for (k = 1; k <= ATTRIB_HISTORY; k++) {
		struct attrib_mark *e = &w->history[level][(next - k) & (ATTRIB_HISTORY - 1)];

		if (!e->ts || e->ts > newer_ts)
			break; /* empty, or overwritten meanwhile */
		m = e;
		if (e->ts <= from)
			break;
		newer = e;
		newer_ts = e->ts;
	}
	if (!m)
		return 0;
	for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++) {
		__u64 at = m->cum[i], hi = newer ? newer->cum[i] : split[i];

		if (m->ts <= from && newer_ts > m->ts && hi > at)
			at += scale(hi - at, from - m->ts, newer_ts - m->ts);
		split[i] = split[i] > at ? split[i] - at : 0;
		total += split[i];
	}
	return total;
}

/* Span thread `c` (task `p`), asleep since off_ts, is woken now by the current task. Returns
 * true when its wait was split by the waker's history (the sleep is then over). */
static __always_inline bool resolve_wait(struct attrib_task *c, struct task_struct *p, __u64 now)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 split[ATTRIB_KERNEL_COMPONENTS], wait, total, given = 0, moved = 0, best = 0;
	__u32 own = c->off_component, best_c = own;
	struct attrib_task *w;
	bool partial;
	int i;

	if (own != ATTRIB_LOCK && own != ATTRIB_SLEEP)
		return false;
	if (cur == p || !c->off_ts || now <= c->off_ts)
		return false;
	/* A waker that just left its span (a helper that detaches, then signals: RAII scopes)
	 * still has its history; only a span thread has one. */
	w = bpf_task_storage_get(&attrib_tasks, cur, 0, 0);
	if (!w || !w->history_next[0])
		return false;
	/* Woken from the waker's own system call (futex wake, write, exit), not an interrupt. */
	if (native_syscall_nr((struct pt_regs *)bpf_task_pt_regs(cur)) < 0)
		return false;
	total = waker_split(w, c->off_ts, now, split, &partial);
	if (!total)
		return false;
	wait = now - c->off_ts;
	for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++) {
		__u64 part = scale(split[i], wait, total);
		/* Its CPU time (the work, the critical section) and its own unexplained waits stay
		 * this wait's; what slowed it down becomes this wait's cause. */
		__u32 to = i == ATTRIB_ON_CPU || i == ATTRIB_LOCK || i == ATTRIB_SLEEP ? own : i;

		if (given + part > wait)
			part = wait - given;
		given += part;
		c->span.component_ns[to & (ATTRIB_KERNEL_COMPONENTS - 1)] += part;
		if (to != own) {
			moved += part;
			if (part > best) {
				best = part;
				best_c = to;
			}
		}
	}
	c->span.component_ns[own & (ATTRIB_KERNEL_COMPONENTS - 1)] += wait - given;
	/* The waker that moved the most (summed while it stays the same thread). */
	if (moved) {
		__u32 tid = BPF_CORE_READ(cur, pid);

		if (tid == c->span.waker_tid) {
			c->span.waker_ns += moved;
		} else if (moved > c->span.waker_ns) {
			c->span.waker_tid = tid;
			c->span.waker_ns = moved;
		}
		if (tid == c->span.waker_tid) {
			c->span.waker_component = best_c;
			c->span.waker_wait = own;
		}
	}
	c->off_ts = 0;
	count_in(&attrib_critpath, ATTRIB_CRIT_RESOLVED);
	if (partial)
		count_in(&attrib_critpath, ATTRIB_CRIT_PARTIAL);
	return true;
}

#endif
