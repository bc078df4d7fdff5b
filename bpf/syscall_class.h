// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* What the BPF programs need to know about a system call, by number, shared with user space:
 * the loader fills a table indexed by syscall number (src/probes/syscall_classes.cpp, from the
 * build's own <sys/syscall.h>) into each object's .rodata before load, so the BPF code names
 * no architecture's numbers. */
#ifndef TAILCAUSE_SYSCALL_CLASS_H
#define TAILCAUSE_SYSCALL_CLASS_H

/* Table size: above every native syscall number of x86-64 and arm64 (about 470 in 6.x). */
#define TAILCAUSE_SYSCALL_SLOTS 512

/* Flags of a table entry (one byte). */
enum tailcause_syscall_flag {
	TAILCAUSE_SYS_LOCK = 1 << 0,	  /* futex family: a sleep in it is lock time */
	TAILCAUSE_SYS_POLL = 1 << 1,	  /* poll/ppoll: network; peer when one descriptor */
	TAILCAUSE_SYS_WAIT_MANY = 1 << 2, /* select/epoll: network, many descriptors, no peer */
	TAILCAUSE_SYS_SOCKET = 1 << 3,	  /* first argument is a socket: network, with its peer */
	TAILCAUSE_SYS_FD_IO = 1 << 4,	  /* read/write family: network when the fd is a socket */
	TAILCAUSE_SYS_WRITES_PAGES = 1 << 5, /* adds page-cache pages it overwrites (not misses) */
};

#endif
