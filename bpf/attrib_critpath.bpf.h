// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: critical-path attribution of a span's waits.
 *
 * Design: docs/architecture.md, "Critical-path waits". */
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

/* The waker `cur` moved `moved` ns of a `own` wait into its causes, most of it to `best`: the
 * span keeps the waker that moved the most (summed while it stays the same thread). */
static __always_inline void note_waker(struct attrib_task *c, struct task_struct *cur, __u64 moved,
				       __u32 best, __u32 own)
{
	__u32 tid;

	if (!moved)
		return;
	tid = BPF_CORE_READ(cur, pid);
	if (tid == c->span.waker_tid) {
		c->span.waker_ns += moved;
	} else if (moved > c->span.waker_ns) {
		c->span.waker_tid = tid;
		c->span.waker_ns = moved;
	}
	if (tid == c->span.waker_tid) {
		c->span.waker_component = best;
		c->span.waker_wait = own;
	}
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
	note_waker(c, cur, moved, best_c, own);
	c->off_ts = 0;
	count_in(&attrib_critpath, ATTRIB_CRIT_RESOLVED);
	if (partial)
		count_in(&attrib_critpath, ATTRIB_CRIT_PARTIAL);
	return true;
}

/* ---- local peers --------------------------------------------------------------------- */

/* Where `t`'s scheduler clocks stand `now`, into `s`; nothing carried. */
static __always_inline void snap_served(struct attrib_served *s, struct task_struct *t, __u64 now)
{
	struct cfs_rq *cfs = task_cfs_rq(t);

	s->snap_ts = now;
	s->run_delay = BPF_CORE_READ(t, sched_info.run_delay);
	s->cfs_rq = (__u64)cfs;
	s->carried_queued = 0;
	s->carried_throttled = 0;
	s->moved_throttled = 0;
	throttle_snapshot(cfs, &s->throttle_snap, &s->throttled);
}

/* Run-queue time of `t` (the current task) since the snapshot `s`, plus what the chain carried
 * to it, into `queued`, and the throttled part of that into `throttled`. */
static __always_inline void served_delay(struct attrib_served *s, struct task_struct *t,
					 __u64 *queued, __u64 *throttled)
{
	__u64 delay = BPF_CORE_READ(t, sched_info.run_delay), q, th = 0, clock;
	struct cfs_rq *cfs = task_cfs_rq(t);

	q = delay > s->run_delay ? delay - s->run_delay : 0;
	if (cfs && (__u64)cfs == s->cfs_rq && throttle_clock(cfs, &clock))
		th = clock > s->throttle_snap ? clock - s->throttle_snap : 0;
	else /* moved CPUs unseen, or no throttle clock: all or nothing by the state then */
		th = s->throttled ? q : 0;
	th += s->moved_throttled;
	if (th > q)
		th = q;
	*queued = q + s->carried_queued;
	*throttled = th + s->carried_throttled;
}

/* From the current task's own system call (a write, a futex wake), not from an interrupt it
 * happened to take. */
static __always_inline bool in_own_syscall(struct task_struct *cur)
{
	return native_syscall_nr((struct pt_regs *)bpf_task_pt_regs(cur)) >= 0;
}

/* The current task wakes `p`, a thread outside spans. A span thread's request reached `p`: `p`
 * keeps its clocks of now. A thread serving such a request hands it on to `p` (an acceptor to
 * a worker): `p` keeps its clocks and the chain's run-queue time so far. */
static __always_inline void note_served(struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct attrib_served *from = NULL, *s;
	__u64 queued = 0, throttled = 0, now;
	struct attrib_task *w = NULL;
	__u32 client, tgid;

	if (cur == p)
		return;
	tgid = current_tgid();
	if (spans_in_process(tgid))
		w = bpf_task_storage_get(&attrib_tasks, cur, 0, 0);
	if (!w || !w->active) {
		if (served_in_process(tgid))
			from = bpf_task_storage_get(&attrib_served, cur, 0, 0);
		if (!from || !from->client_tid)
			return;
	}
	if (!in_own_syscall(cur))
		return;
	now = bpf_ktime_get_ns();
	if (from) {
		served_delay(from, cur, &queued, &throttled);
		client = from->client_tid;
	} else {
		client = BPF_CORE_READ(cur, pid);
	}
	mark_served(p->tgid);
	s = bpf_task_storage_get(&attrib_served, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return;
	snap_served(s, p, now);
	if (from) { /* the chain's snapshot time stays the oldest */
		s->snap_ts = from->snap_ts;
		s->carried_queued = queued;
		s->carried_throttled = throttled;
	}
	s->client_tid = client;
}

/* A wake-up older than this is not the one that brought a thread to its attach. */
#define ATTRIB_BACKFILL_MAX_NS 1000000000ULL

/* Thread `c` (the current task `t`) attaches to a request at `now`. When a span thread woke it
 * for that (a pool's helper taking a job), what it went through since that wake-up, read from
 * the clocks note_served() kept, goes into its history as a mark at the wake-up: the run-queue
 * and throttled time, the rest counted as running. A span waiting on it is then split by the
 * helper's wait to run as well, not only by what it did once attached; without this a helper
 * throttled before it could attach left the wait as lock. */
static __always_inline void backfill_wake(struct attrib_task *c, struct task_struct *t, __u64 now)
{
	struct attrib_served *s = bpf_task_storage_get(&attrib_served, t, 0, 0);
	__u64 queued, throttled, since;
	int i, level;

	if (!s || !s->client_tid || !s->snap_ts || now <= s->snap_ts ||
	    now - s->snap_ts > ATTRIB_BACKFILL_MAX_NS)
		return;
	for (level = 0; level < ATTRIB_HISTORY_LEVELS; level++) {
		__u32 next = c->history_next[level];

		if (next && c->history[level][(next - 1) & (ATTRIB_HISTORY - 1)].ts > s->snap_ts)
			return; /* marks are kept in time order */
	}
	served_delay(s, t, &queued, &throttled);
	since = now - s->snap_ts;
	if (queued > since)
		queued = since;
	if (throttled > queued)
		throttled = queued;
	for (level = 0; level < ATTRIB_HISTORY_LEVELS; level++) {
		__u32 next = c->history_next[level];
		struct attrib_mark *m = &c->history[level][next & (ATTRIB_HISTORY - 1)];

		m->ts = s->snap_ts;
		for (i = 0; i < ATTRIB_KERNEL_COMPONENTS; i++)
			m->cum[i] = cum_now(c, i);
		c->history_next[level] = next + 1;
	}
	c->cum_base[ATTRIB_CPU_THROTTLED] += throttled;
	c->cum_base[ATTRIB_RUNQUEUE] += queued - throttled;
	c->cum_base[ATTRIB_ON_CPU] += since - queued;
	s->snap_ts = 0; /* used up */
	s->client_tid = 0;
}

/* A loopback address: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 (network byte order). */
static __always_inline bool loopback_peer(const struct attrib_peer *p)
{
	const __u32 *w = (const __u32 *)p->addr;

	if (p->family == AF_INET)
		return p->addr[0] == 127;
	if (p->family != AF_INET6 || w[0] || w[1])
		return false;
	if (!w[2] && w[3] == bpf_htonl(1))
		return true;
	return w[2] == bpf_htonl(0xffff) && p->addr[12] == 127;
}

/* Span thread `c` (task `p`), asleep on a socket since off_ts, is woken now by the current
 * task from its own system call: the peer's answer. The run-queue and throttled time of the
 * peer's chain since its snapshot become this wait's, the rest stays network. A snapshot older
 * than the wait (a server that polls its sockets is not woken by the request; its last answer
 * is then the snapshot) stands for its share of the time since: the run-queue time is scaled to
 * the wait. The waker must have served `p` before, unless the socket's peer is a loopback
 * address: then it is local for certain, and a waker seen for the first time keeps its clocks
 * for its next answer. Returns true when the wait was split (the sleep is then over). */
static __always_inline bool resolve_peer_wait(struct attrib_task *c, struct task_struct *p,
					      __u64 now)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 wait, queued, throttled, since;
	__u32 client = BPF_CORE_READ(p, pid);
	struct attrib_served *s;
	bool local;

	if (c->off_component != ATTRIB_NETWORK || cur == p || !c->off_ts || now <= c->off_ts)
		return false;
	if (!in_own_syscall(cur))
		return false; /* an interrupt's wake-up (a remote peer, a qdisc timer) */
	local = loopback_peer(&c->off_peer);
	if (local)
		mark_served(current_tgid());
	s = bpf_task_storage_get(&attrib_served, cur, 0,
				 local ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!s || (s->client_tid != client && !local))
		return false;
	if (!s->snap_ts || now <= s->snap_ts) { /* first seen: its clocks from now on */
		snap_served(s, cur, now);
		s->client_tid = client;
		return false;
	}
	if (s->client_tid != client) { /* what the chain carried was another client's */
		s->carried_queued = 0;
		s->carried_throttled = 0;
	}
	served_delay(s, cur, &queued, &throttled);
	since = now - s->snap_ts;
	snap_served(s, cur, now); /* the next answer counts from here */
	s->client_tid = client;
	wait = now - c->off_ts;
	if (since > wait) { /* clocks from before the wait: its share of it */
		queued = scale(queued, wait, since);
		throttled = scale(throttled, wait, since);
	}
	if (queued > wait) {
		throttled = scale(throttled, wait, queued);
		queued = wait;
	}
	if (!queued)
		return false; /* the peer ran at once: the caller ends the network wait */
	c->span.component_ns[ATTRIB_CPU_THROTTLED] += throttled;
	c->span.component_ns[ATTRIB_RUNQUEUE] += queued - throttled;
	c->span.component_ns[ATTRIB_NETWORK] += wait - queued;
	add_peer_wait(c, wait - queued);
	note_waker(c, cur, queued, throttled * 2 > queued ? ATTRIB_CPU_THROTTLED : ATTRIB_RUNQUEUE,
		   ATTRIB_NETWORK);
	c->off_ts = 0;
	count_in(&attrib_critpath, ATTRIB_CRIT_PEER);
	return true;
}

#endif
