// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: how a context thread's off-CPU time is classified (run queue,
 * CPU throttling, block I/O, network, lock, GPU, sleep) and how missed switch-ins are repaired. */
#ifndef TAILCAUSE_ATTRIB_SCHED_BPF_H
#define TAILCAUSE_ATTRIB_SCHED_BPF_H

#include <bpf/bpf_endian.h>

#include "attrib_context.bpf.h"
#include "syscalls.bpf.h"

/* ---- CPU throttling ------------------------------------------------------------------ */

/* Cumulative time the CFS run queue has been throttled, in its rq clock, up to now: the
 * kernel's throttled_clock_self_time (6.8+) plus the current throttled stretch. False when the
 * kernel lacks the field. The task's own cfs_rq is marked when any ancestor is throttled. */
static __always_inline bool throttle_clock(struct cfs_rq *cfs, __u64 *out)
{
	struct cfs_rq___v6_8 *cur = (void *)cfs;
	__u64 total, since, now;

	if (!bpf_core_field_exists(cur->throttled_clock_self_time))
		return false;
	total = BPF_CORE_READ(cur, throttled_clock_self_time);
	since = BPF_CORE_READ(cur, throttled_clock_self);
	if (since) {
		now = BPF_CORE_READ(cfs, rq, clock);
		if (now > since)
			total += now - since;
	}
	*out = total;
	return true;
}

static __always_inline struct cfs_rq *task_cfs_rq(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->se.cfs_rq)) /* kernels without group scheduling */
		return NULL;
	return BPF_CORE_READ(t, se.cfs_rq);
}

/* Where run queue `cfs`'s throttle clock stands now, and whether its hierarchy is throttled
 * now (what a reader falls back on when the task has moved to another CPU's run queue). */
static __always_inline void throttle_snapshot(struct cfs_rq *cfs, __u64 *clock, __u32 *throttled)
{
	*clock = 0;
	*throttled = 0;
	if (!cfs)
		return;
	if (bpf_core_field_exists(cfs->throttle_count))
		*throttled = BPF_CORE_READ(cfs, throttle_count) > 0;
	throttle_clock(cfs, clock);
}

/* ---- memory reclaim ahead in the run queue ------------------------------------------- */

/* Per CPU and process: how long the process's span threads have run there inside memory
 * reclaim, summed, and since when one of them on it now has (0: none is). A span thread queued
 * behind a thread of its own process that reclaims (a helper making room for the pages it reads
 * under a memory cgroup's limit) waits on the page cache's cost, not on CPU contention: that
 * part of its run-queue wait is block_io, as the reclaimer's own CPU time is (add()). Behind
 * another process's reclaim it stays run queue: a neighbour, which the run queue's evidence
 * names. Written on its own CPU only, from sched_switch and the reclaim tracepoints (preemption
 * off), read from any CPU. Until a span thread first reclaims, waits read no clock. */
struct attrib_reclaim_key {
	__u32 cpu;
	__u32 tgid;
};

struct attrib_reclaim_clock {
	__u64 total;
	__u64 since;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ATTRIB_MAX_RECLAIM_CLOCKS);
	__type(key, struct attrib_reclaim_key);
	__type(value, struct attrib_reclaim_clock);
} attrib_reclaim_clocks SEC(".maps");

static volatile __u32 attrib_reclaim_seen;

#define ATTRIB_RECLAIM_UNSAMPLED (~0ULL) /* a wait that began before any reclaim was seen */

/* The CPU whose run queue `cfs` is (-1: unknown). */
static __always_inline int cfs_rq_cpu(struct cfs_rq *cfs)
{
	if (!cfs || !bpf_core_field_exists(cfs->rq->cpu))
		return -1;
	return BPF_CORE_READ(cfs, rq, cpu);
}

/* Process `tgid`'s reclaim clock on CPU `cpu` at `now` (0: none kept). */
static __always_inline __u64 reclaim_clock(int cpu, __u32 tgid, __u64 now)
{
	struct attrib_reclaim_key key = {.cpu = cpu, .tgid = tgid};
	struct attrib_reclaim_clock *r;
	__u64 since;

	if (cpu < 0)
		return 0;
	r = bpf_map_lookup_elem(&attrib_reclaim_clocks, &key);
	if (!r)
		return 0;
	since = r->since;
	return r->total + (since && now > since ? now - since : 0);
}

/* From `now` the current CPU runs a span thread of process `tgid` inside reclaim (`running`),
 * or stops doing so. */
static __always_inline void reclaim_on_this_cpu(bool running, __u64 now, __u32 tgid)
{
	struct attrib_reclaim_key key = {.cpu = bpf_get_smp_processor_id(), .tgid = tgid};
	struct attrib_reclaim_clock fresh = {}, *r;

	r = bpf_map_lookup_elem(&attrib_reclaim_clocks, &key);
	if (!r) {
		if (!running)
			return;
		attrib_reclaim_seen = 1;
		bpf_map_update_elem(&attrib_reclaim_clocks, &key, &fresh, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&attrib_reclaim_clocks, &key);
		if (!r)
			return;
	}
	if (r->since && now > r->since)
		r->total += now - r->since;
	r->since = running ? now : 0;
}

/* Where the reclaim clock of `t`'s process on run queue `cfs` stands `now`, for a wait. */
static __always_inline __u64 reclaim_snapshot(struct task_struct *t, struct cfs_rq *cfs, __u64 now)
{
	if (!attrib_reclaim_seen)
		return ATTRIB_RECLAIM_UNSAMPLED;
	return reclaim_clock(cfs_rq_cpu(cfs), BPF_CORE_READ(t, tgid), now);
}

/* How much of a run-queue `wait` of `t` that ends now on the current CPU (`cfs`: its run
 * queue now) threads of its process spent reclaiming ahead of it, at most `most`. */
static __always_inline __u64 reclaim_part(struct attrib_task *c, struct task_struct *t,
					  struct cfs_rq *cfs, __u64 now, __u64 most)
{
	__u64 part = c->reclaim_carried, clock;

	/* Moved unseen, the snapshot is another CPU's: only what was carried counts. */
	if (c->reclaim_snap != ATTRIB_RECLAIM_UNSAMPLED && cfs && (__u64)cfs == c->wait_cfs_rq) {
		clock = reclaim_clock(bpf_get_smp_processor_id(), BPF_CORE_READ(t, tgid), now);
		if (clock > c->reclaim_snap)
			part += clock - c->reclaim_snap;
	}
	return part < most ? part : most;
}

/* The task becomes runnable but is not running: remember where its throttle clock and its
 * process's reclaim clock on its CPU stood. */
static __always_inline void start_wait(struct attrib_task *c, struct task_struct *t, __u64 now)
{
	struct cfs_rq *cfs = task_cfs_rq(t);

	c->wait_ts = now;
	c->wait_cfs_rq = (__u64)cfs;
	c->throttle_carried = 0;
	throttle_snapshot(cfs, &c->throttle_snap, &c->throttled_at_wait);
	c->reclaim_snap = reclaim_snapshot(t, cfs, now);
	c->reclaim_carried = 0;
}

/* Waiting span thread `t` moves from the run queue `from` to CPU `to`'s at `now`: the reclaim
 * run ahead of it so far goes along, and the new CPU's clock is read from here. */
static __always_inline void move_reclaim_clock(struct attrib_task *c, struct task_struct *t,
					       struct cfs_rq *from, int to, __u64 now)
{
	__u64 clock;
	__u32 tgid;

	if (!attrib_reclaim_seen)
		return;
	tgid = BPF_CORE_READ(t, tgid);
	if (c->reclaim_snap != ATTRIB_RECLAIM_UNSAMPLED) {
		clock = reclaim_clock(cfs_rq_cpu(from), tgid, now);
		if (clock > c->reclaim_snap)
			c->reclaim_carried += clock - c->reclaim_snap;
	}
	c->reclaim_snap = reclaim_clock(to, tgid, now);
}

/* A waiting task's run queue changes from the one in `*rq` to `to` (the load balancer moved
 * it, or a wake-up placed it on another CPU): the throttled time on the old one since `*snap`
 * is added to `*carried`, and the new one's clock is read from here. Without this a thread
 * moved to a CPU where its cgroup was then throttled waited out the quota's period as "run
 * queue" (seen under a 10% quota: a 97 ms retrieval, 99% run queue via its helper). */
static __always_inline void move_throttle_clock(__u64 *rq, __u64 *snap, __u32 *throttled,
						__u64 *carried, struct cfs_rq *to)
{
	struct cfs_rq *from = (struct cfs_rq *)*rq;
	__u64 clock;

	if (from && throttle_clock(from, &clock) && clock > *snap)
		*carried += clock - *snap;
	*rq = (__u64)to;
	throttle_snapshot(to, snap, throttled);
}

/* The run queue of task `t`'s group on CPU `cpu` (where a migration takes it), or NULL. */
static __always_inline struct cfs_rq *cfs_rq_on(struct task_struct *t, int cpu)
{
	struct cfs_rq *cfs = task_cfs_rq(t), *on = NULL;
	struct cfs_rq **per_cpu;

	if (!cfs || !bpf_core_field_exists(cfs->tg) || cpu < 0)
		return NULL;
	per_cpu = BPF_CORE_READ(cfs, tg, cfs_rq);
	if (per_cpu)
		bpf_probe_read_kernel(&on, sizeof(on), &per_cpu[cpu]);
	return on;
}

/* How much of a `wait` that ends now was throttling. */
static __always_inline __u64 throttled_part(struct attrib_task *c, struct task_struct *t,
					    __u64 wait)
{
	struct cfs_rq *cfs = task_cfs_rq(t);
	__u64 clock, part;

	if (!cfs)
		return 0;
	if ((__u64)cfs == c->wait_cfs_rq && throttle_clock(cfs, &clock))
		part = clock > c->throttle_snap ? clock - c->throttle_snap : 0;
	else /* moved unseen, or no throttle clock: all or nothing by the state at wait start */
		part = c->throttled_at_wait ? wait : 0;
	part += c->throttle_carried;
	return part < wait ? part : wait;
}

/* ---- why a thread sleeps ------------------------------------------------------------- */

/* The file of descriptor `fd` of task `t` when it is a socket, else NULL. Only asked for
 * threads in a span going to sleep in a system call on a descriptor. */
static __always_inline struct file *socket_file(struct task_struct *t, long fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds, *f = NULL;
	unsigned int mode;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	if (!f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	return (mode & S_IFMT) == S_IFSOCK ? f : NULL;
}

/* The remote end of a connected IPv4/IPv6 socket (a socket file's private_data is its struct
 * socket). `out` is left without a family for anything else: Unix sockets, listeners (accept),
 * unconnected UDP. */
static __always_inline void socket_peer(struct file *f, struct attrib_peer *out)
{
	struct socket *sock;
	struct sock *sk;
	__u16 family, port;
	__u32 v4;

	if (!f)
		return;
	sock = (struct socket *)BPF_CORE_READ(f, private_data);
	sk = sock ? BPF_CORE_READ(sock, sk) : NULL;
	if (!sk)
		return;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	port = BPF_CORE_READ(sk, __sk_common.skc_dport);
	if (!port)
		return;
	__builtin_memset(out->addr, 0, sizeof(out->addr));
	if (family == AF_INET) {
		v4 = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(out->addr, &v4, sizeof(v4));
	} else if (family == AF_INET6 && bpf_core_field_exists(sk->__sk_common.skc_v6_daddr)) {
		BPF_CORE_READ_INTO(&out->addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	} else {
		return;
	}
	out->port = bpf_ntohs(port);
	out->family = family;
}

/* The descriptor of a poll()/ppoll() on one descriptor (its first struct pollfd), or -1. */
static __always_inline long polled_fd(struct pt_regs *regs)
{
	const struct pollfd *fds = (const struct pollfd *)syscall_arg(regs, 0);
	int fd = -1;

	if (!fds || bpf_probe_read_user(&fd, sizeof(fd), &fds->fd))
		return -1;
	return fd;
}

/* An interruptible sleep, classified by the system call it sleeps in: the task's user-mode
 * frame holds the syscall number and arguments while it is in the kernel, and the loader's
 * table (bpf/syscalls.bpf.h) says what the number is. A sleep in a call on one socket also
 * names that socket's peer in `peer`. */
static __always_inline __u32 syscall_component(struct task_struct *t, struct attrib_peer *peer)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	__u8 flags = syscall_flags(regs);
	struct file *f;

	if (flags & TAILCAUSE_SYS_LOCK)
		return ATTRIB_LOCK;
	if (flags & TAILCAUSE_SYS_POLL) {
		/* On one descriptor (HTTP clients with timeouts, Python sockets with a timeout):
		 * its peer. The array is in the sleeping task's memory: `t` is current here. */
		if (syscall_arg(regs, 1) == 1)
			socket_peer(socket_file(t, polled_fd(regs)), peer);
		return ATTRIB_NETWORK;
	}
	if (flags & TAILCAUSE_SYS_WAIT_MANY) /* select/epoll: many descriptors, no one peer */
		return ATTRIB_NETWORK;
	if (flags & TAILCAUSE_SYS_SOCKET) { /* connect, accept, send*, recv*: arg 0 is the socket */
		socket_peer(socket_file(t, syscall_arg(regs, 0)), peer);
		return ATTRIB_NETWORK;
	}
	if (flags & TAILCAUSE_SYS_FD_IO) { /* read, write, readv, writev: network on a socket */
		f = socket_file(t, syscall_arg(regs, 0));
		if (!f)
			return ATTRIB_SLEEP;
		socket_peer(f, peer);
		return ATTRIB_NETWORK;
	}
	return ATTRIB_SLEEP;
}

/* Why a thread in a span sleeps (`t`: the current task, going to sleep); `peer` gets the
 * socket peer of a network sleep that has one (the caller clears its family first). */
static __always_inline __u32 sleep_component(struct attrib_task *c, struct task_struct *t,
					     unsigned int state, struct attrib_peer *peer)
{
	if (c->gpu_wait)
		return ATTRIB_GPU;
	if ((state & TASK_UNINTERRUPTIBLE) && !(state & TASK_NOLOAD))
		return ATTRIB_BLOCK_IO;
	return syscall_component(t, peer);
}

/* ---- kernel anomalies ---------------------------------------------------------------- */

/* Stamps a stretch of `component` that ended at `end` on the thread and on its process (the
 * span's identity carries the thread's own tgid). Only reached for threads in a span, and only
 * for stretches of anomaly_min_ns or more (or major faults): never on the common path. The
 * process entry is replaced whole (an LRU update), so a reader never sees half of one. */
static __always_inline void note_anomaly(struct attrib_task *c, __u32 kind, __u64 end,
					 __u64 duration)
{
	struct attrib_anomaly a = {.end_ns = end, .duration_ns = duration, .kind = kind};
	__u32 tgid = c->id.tgid;

	c->anomaly = a;
	if (bpf_map_update_elem(&attrib_anomalies, &tgid, &a, BPF_ANY))
		count_lost(); /* only when the map's bucket is busy on this CPU (reentry) */
}

/* ---- spans --------------------------------------------------------------------------- */

/* An interval with an unknown start (0) is dropped rather than counted from boot. */
static __always_inline void add(struct attrib_task *c, __u32 component, __u64 from, __u64 to)
{
	/* Inside a GPU-sync call (recipe) the thread's own CPU time is spent waiting on the GPU
	 * (drivers spin before they sleep); run-queue and throttling waits stay what they are. */
	if (component == ATTRIB_ON_CPU && c->gpu_wait)
		component = ATTRIB_GPU;
	/* Reclaiming memory to make room for the pages it reads (a memory cgroup at its limit, a
	 * node short of memory) is the page cache's cost, not the stage's own work. */
	else if (component == ATTRIB_ON_CPU && c->reclaiming)
		component = ATTRIB_BLOCK_IO;
	if (component < ATTRIB_KERNEL_COMPONENTS && from && to > from) {
		c->span.component_ns[component] += to - from;
		if (component == ATTRIB_BLOCK_IO && to - from >= anomaly_min_ns)
			note_anomaly(c, ATTRIB_BLOCK_IO, to, to - from);
	}
}

/* The span thread `c` is on CPU: its time on CPU so far is counted now (under what add()
 * counts it as until now), so that what follows can be counted as something else. */
static __always_inline void split_on_cpu(struct attrib_task *c)
{
	__u64 now, from = c->last_in;

	if (!c->active || !from)
		return;
	now = bpf_ktime_get_ns();
	c->last_in = now;
	add(c, ATTRIB_ON_CPU, from, now);
}

/* The same endpoint (their wait aside). */
static __always_inline bool same_peer(const struct attrib_peer *a, const struct attrib_peer *b)
{
	const __u64 *x = (const __u64 *)a->addr, *y = (const __u64 *)b->addr;

	return x[0] == y[0] && x[1] == y[1] && a->family == b->family && a->port == b->port;
}

/* A network sleep of `ns` on the socket peer noted at its start ended: the wait is added to
 * that peer's sum (in a free slot, or the one of the peer with the least wait when all are
 * taken), and the span reports the peer whose sum is largest. */
static __always_inline void add_peer_wait(struct attrib_task *c, __u64 ns)
{
	struct attrib_peer *slot = NULL, *least = NULL;
	int i;

	if (!c->off_peer.family)
		return;
	for (i = 0; i < ATTRIB_PEER_SLOTS; i++) {
		struct attrib_peer *p = &c->peers[i];

		if (p->family && same_peer(p, &c->off_peer)) {
			slot = p;
			break;
		}
		if (!least || p->wait_ns < least->wait_ns)
			least = p; /* a free slot has no wait */
	}
	if (!slot) {
		if (!least)
			return;
		slot = least;
		*slot = c->off_peer;
		slot->wait_ns = 0;
	}
	slot->wait_ns += ns;
	if (slot->wait_ns > c->span.peer.wait_ns)
		c->span.peer = *slot;
}

/* The sleep that began at off_ts ends at `now` (a wakeup, or a switch-in without one). */
static __always_inline void end_sleep(struct attrib_task *c, __u64 now)
{
	add(c, c->off_component, c->off_ts, now);
	if (c->off_component == ATTRIB_NETWORK && c->off_ts && now > c->off_ts)
		add_peer_wait(c, now - c->off_ts);
	c->off_ts = 0;
}

/* The thread runs again (switch-in at `now`): its sleep or run-queue wait ends. */
static __always_inline void end_off_cpu(struct attrib_task *c, struct task_struct *t, __u64 now)
{
	if (c->off_ts) { /* woken without a wakeup event seen: the whole gap is the sleep */
		end_sleep(c, now);
	} else if (c->wait_ts && now > c->wait_ts) {
		__u64 wait = now - c->wait_ts;
		__u64 throttled = throttled_part(c, t, wait);
		/* Throttled, it could not have run anyway: reclaim ahead counts beside that. */
		__u64 reclaim = reclaim_part(c, t, task_cfs_rq(t), now, wait - throttled);
		__u64 queued = wait - throttled - reclaim;
		__u32 kind = ATTRIB_RUNQUEUE;

		c->span.component_ns[ATTRIB_CPU_THROTTLED] += throttled;
		c->span.component_ns[ATTRIB_BLOCK_IO] += reclaim;
		c->span.component_ns[ATTRIB_RUNQUEUE] += queued;
		if (throttled)
			c->span.throttled_waits++;
		/* One stall, named by what most of it was. */
		if (throttled > queued && throttled >= reclaim)
			kind = ATTRIB_CPU_THROTTLED;
		else if (reclaim > queued)
			kind = ATTRIB_BLOCK_IO;
		if (wait >= anomaly_min_ns)
			note_anomaly(c, kind, now, wait);
	}
	c->off_ts = 0;
	c->wait_ts = 0;
	c->last_in = now;
}

/* The thread is on CPU but no switch-in was seen: take the time of its last switch-in from
 * the scheduler, in ktime through the offset sampled at its last switch-out. */
static __always_inline void repair_missed_switch_in(struct attrib_task *c, struct task_struct *t,
						    __u64 now)
{
	__u64 pending = c->off_ts ? c->off_ts : c->wait_ts;
	__u64 arrival, at;

	if (c->last_in || !pending)
		return;
	count_in(&attrib_events_lost, ATTRIB_LOST_SWITCHES);
	if (!bpf_core_field_exists(t->sched_info.last_arrival) || !c->clock_offset)
		return; /* the gap stays unattributed */
	arrival = BPF_CORE_READ(t, sched_info.last_arrival);
	at = arrival + c->clock_offset;
	if (at < pending)
		at = pending;
	if (at > now)
		at = now;
	end_off_cpu(c, t, at);
}

/* ktime minus the rq clock of the task's CPU; meaningful where the scheduler just updated it. */
static __always_inline __s64 rq_clock_offset(struct task_struct *t, __u64 now)
{
	__u64 clock;

	if (!bpf_core_field_exists(t->se.cfs_rq))
		return 0;
	clock = BPF_CORE_READ(t, se.cfs_rq, rq, clock);
	return clock ? (__s64)(now - clock) : 0;
}

#endif
