// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* What vmlinux.h cannot give the BPF programs, in one place (BPF side only):
 * - constants that are macros in the kernel (BTF carries types, not #defines), each with the
 *   kernel version since which its value holds;
 * - CO-RE flavours (struct x___suffix) of older kernels' layouts, named after the change that
 *   removed them: CO-RE matches them by name up to "___" and the programs test with
 *   bpf_core_field_exists() which one the running kernel has. */
#ifndef TAILCAUSE_CORE_FIXES_BPF_H
#define TAILCAUSE_CORE_FIXES_BPF_H

#include "vmlinux.h"

/* ---- constants (macros, absent from BTF) --------------------------------------------- */

/* task->__state bits (include/linux/sched.h); TASK_NOLOAD has been 0x400 since it came in 4.2,
 * TASK_IDLE = TASK_UNINTERRUPTIBLE | TASK_NOLOAD (idle kthreads, not I/O). */
#define TASK_RUNNING	     0x0
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_NOLOAD	     0x400

/* errno (asm-generic, every architecture but alpha/mips/parisc/sparc, none of which run us). */
#define E2BIG  7
#define EEXIST 17

/* inode->i_mode file types (include/uapi/linux/stat.h, unchanged since 1.0). */
#define S_IFMT	 00170000
#define S_IFSOCK 0140000

/* Address families and protocols (include/linux/socket.h, uapi/linux/in.h; fixed ABI). */
#define AF_INET	    2
#define AF_INET6    10
#define IPPROTO_TCP 6

/* ---- older layouts (CO-RE flavours) -------------------------------------------------- */

/* Before 5.19 a block request named its disk directly (rq->rq_disk); later only through its
 * queue (rq->q->disk). */
struct request___rq_disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Folio size since 6.15, in the folio itself: a flavour too, so that the programs also build
 * against a vmlinux.h of an older kernel (bpf/arm64/vmlinux.h is Debian 12's 6.1). */
struct folio___v6_15 {
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

/* A CFS run queue's own throttled time since 6.8 (a flavour for the same reason as above). */
struct cfs_rq___v6_8 {
	u64 throttled_clock_self;
	u64 throttled_clock_self_time;
} __attribute__((preserve_access_index));

/* Folio size fields before 6.15 (_nr_pages in the folio itself since then). */
struct folio___v6_2 {
	unsigned int _folio_nr_pages; /* 6.2 .. 6.14, 64-bit */
	unsigned long _flags_1;	      /* 6.6+: order in the low byte */
	unsigned char _folio_order;   /* 6.1 .. 6.5 */
} __attribute__((preserve_access_index));

#endif
