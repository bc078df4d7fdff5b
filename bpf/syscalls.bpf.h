// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The system call a task is in, architecture-neutral (BPF side only): the number comes from the
 * task's user-mode register frame, its meaning from a table the loader fills from the build's
 * own headers (bpf/syscall_class.h). Used by the page-cache helpers (memory, attrib) and the
 * attrib family's sleep classification. */
#ifndef TAILCAUSE_SYSCALLS_BPF_H
#define TAILCAUSE_SYSCALLS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "syscall_class.h"

/* Set by the loader (syscall_classes()): enum tailcause_syscall_flag bits by syscall number.
 * Left zero, every call is "other": nothing is misclassified, only less is told apart. */
const volatile __u8 syscall_class[TAILCAUSE_SYSCALL_SLOTS] = {};

#if defined(__TARGET_ARCH_arm64)
/* arm64's frame, as a CO-RE flavour so that this compiles against any vmlinux.h. */
struct pt_regs___aarch64 {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));
#endif

/* The native system call number `regs` (a task's user-mode frame, bpf_task_pt_regs()) is in, or
 * -1: not in a system call (a fault, an interrupt), or in a 32-bit (compat) one, whose numbers
 * are another table's. */
static __always_inline long native_syscall_nr(struct pt_regs *regs)
{
	if (!regs)
		return -1;
#if defined(__TARGET_ARCH_x86)
	/* __USER_CS (0x33): a 64-bit frame. orig_ax holds the number for a syscall but the error
	 * code for a fault; the SYSCALL instruction leaves its return address in rcx (saved as cx)
	 * and that is the frame's ip, which tells the two (and int $0x80 from 64-bit code) apart.
	 */
	if (BPF_CORE_READ(regs, cs) != 0x33 || BPF_CORE_READ(regs, cx) != BPF_CORE_READ(regs, ip))
		return -1;
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	{
		struct pt_regs___aarch64 *r = (void *)regs;

		if (BPF_CORE_READ(r, pstate) & 0x10) /* PSR_MODE32_BIT: an AArch32 (compat) task */
			return -1;
		return BPF_CORE_READ(r, syscallno); /* NO_SYSCALL (-1) outside a syscall */
	}
#else
	return -1; /* unknown frame layout: every call is "other" */
#endif
}

/* Argument `n` (0 or 1) of the system call of frame `regs`, as it was at entry. */
static __always_inline unsigned long syscall_arg(struct pt_regs *regs, int n)
{
#if defined(__TARGET_ARCH_x86)
	return n == 0 ? BPF_CORE_READ(regs, di) : BPF_CORE_READ(regs, si);
#elif defined(__TARGET_ARCH_arm64)
	struct pt_regs___aarch64 *r = (void *)regs;

	/* x0 becomes the return value; orig_x0 keeps the first argument. */
	return n == 0 ? BPF_CORE_READ(r, orig_x0) : BPF_CORE_READ(r, regs[1]);
#else
	return 0;
#endif
}

/* The table's flags for the system call of frame `regs` (0: none, or not in one). */
static __always_inline __u8 syscall_flags(struct pt_regs *regs)
{
	long nr = native_syscall_nr(regs);

	if (nr < 0 || nr >= TAILCAUSE_SYSCALL_SLOTS)
		return 0;
	return syscall_class[nr];
}

#endif
