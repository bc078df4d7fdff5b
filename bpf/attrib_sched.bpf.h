/* Attribution family, BPF side: how a context thread's off-CPU time is classified (run queue,
 * CPU throttling, block I/O, network, lock, GPU, sleep) and how missed switch-ins are repaired. */
#ifndef INFERTRACE_ATTRIB_SCHED_BPF_H
#define INFERTRACE_ATTRIB_SCHED_BPF_H

#include "attrib_context.bpf.h"

/* ---- CPU throttling ------------------------------------------------------------------ */

/* Cumulative time the CFS run queue has been throttled, in its rq clock, up to now: the
 * kernel's throttled_clock_self_time (6.8+) plus the current throttled stretch. False when the
 * kernel lacks the field. The task's own cfs_rq is marked when any ancestor is throttled. */
static __always_inline bool throttle_clock(struct cfs_rq *cfs, __u64 *out)
{
	__u64 total, since, now;

	if (!bpf_core_field_exists(cfs->throttled_clock_self_time))
		return false;
	total = BPF_CORE_READ(cfs, throttled_clock_self_time);
	since = BPF_CORE_READ(cfs, throttled_clock_self);
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

/* The task becomes runnable but is not running: remember where its throttle clock stood. */
static __always_inline void start_wait(struct attrib_task *c, struct task_struct *t, __u64 now)
{
	struct cfs_rq *cfs = task_cfs_rq(t);

	c->wait_ts = now;
	c->wait_cfs_rq = (__u64)cfs;
	c->throttle_snap = 0;
	c->throttled_at_wait = 0;
	if (!cfs)
		return;
	if (bpf_core_field_exists(cfs->throttle_count))
		c->throttled_at_wait = BPF_CORE_READ(cfs, throttle_count) > 0;
	throttle_clock(cfs, &c->throttle_snap);
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
	else /* migrated, or no throttle clock: all or nothing by the state at wait start */
		part = c->throttled_at_wait ? wait : 0;
	return part < wait ? part : wait;
}

/* ---- why a thread sleeps ------------------------------------------------------------- */

#if defined(__TARGET_ARCH_x86)
/* Is descriptor `fd` of task `t` a socket? Only asked for threads asleep in read/write. */
static __always_inline bool fd_is_socket(struct task_struct *t, long fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds, *f = NULL;
	unsigned int mode;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return false;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	if (!f)
		return false;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	return (mode & S_IFMT) == S_IFSOCK;
}

/* An interruptible sleep, classified by the system call it sleeps in: the task's user-mode
 * frame holds the syscall number (orig_ax) and arguments while it is in the kernel. */
static __always_inline __u32 syscall_component(struct task_struct *t)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	long nr;

	if (!regs || BPF_CORE_READ(regs, cs) != 0x33) /* not a 64-bit user frame */
		return ATTRIB_SLEEP;
	nr = BPF_CORE_READ(regs, orig_ax);
	switch (nr) {
	case 202: /* futex */
	case 449: /* futex_waitv */
	case 455: /* futex_wait */
	case 456: /* futex_requeue */
		return ATTRIB_LOCK;
	case 7:   /* poll */
	case 23:  /* select */
	case 42:  /* connect */
	case 43:  /* accept */
	case 44:  /* sendto */
	case 45:  /* recvfrom */
	case 46:  /* sendmsg */
	case 47:  /* recvmsg */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 288: /* accept4 */
	case 299: /* recvmmsg */
	case 307: /* sendmmsg */
	case 441: /* epoll_pwait2 */
		return ATTRIB_NETWORK;
	case 0:  /* read */
	case 1:  /* write */
	case 19: /* readv */
	case 20: /* writev */
		return fd_is_socket(t, BPF_CORE_READ(regs, di)) ? ATTRIB_NETWORK : ATTRIB_SLEEP;
	default:
		return ATTRIB_SLEEP;
	}
}
#else
static __always_inline __u32 syscall_component(struct task_struct *t)
{
	return ATTRIB_SLEEP;
}
#endif

static __always_inline __u32 sleep_component(struct attrib_task *c, struct task_struct *t,
					     unsigned int state)
{
	if (c->gpu_wait)
		return ATTRIB_GPU;
	if ((state & TASK_UNINTERRUPTIBLE) && !(state & TASK_NOLOAD))
		return ATTRIB_BLOCK_IO;
	return syscall_component(t);
}

/* ---- spans --------------------------------------------------------------------------- */

/* An interval with an unknown start (0) is dropped rather than counted from boot. */
static __always_inline void add(struct attrib_task *c, __u32 component, __u64 from, __u64 to)
{
	/* Inside a GPU-sync call (recipe) the thread's own CPU time is spent waiting on the GPU
	 * (drivers spin before they sleep); run-queue and throttling waits stay what they are. */
	if (component == ATTRIB_ON_CPU && c->gpu_wait)
		component = ATTRIB_GPU;
	if (component < ATTRIB_KERNEL_COMPONENTS && from && to > from)
		c->span.component_ns[component] += to - from;
}

/* The thread runs again (switch-in at `now`): its sleep or run-queue wait ends. */
static __always_inline void end_off_cpu(struct attrib_task *c, struct task_struct *t, __u64 now)
{
	if (c->off_ts) { /* woken without a wakeup event seen: the whole gap is the sleep */
		add(c, c->off_component, c->off_ts, now);
	} else if (c->wait_ts && now > c->wait_ts) {
		__u64 wait = now - c->wait_ts;
		__u64 throttled = throttled_part(c, t, wait);

		c->span.component_ns[ATTRIB_CPU_THROTTLED] += throttled;
		c->span.component_ns[ATTRIB_RUNQUEUE] += wait - throttled;
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
	count_lost_kind(ATTRIB_LOST_SWITCHES);
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
