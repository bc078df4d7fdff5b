// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Page-cache helpers shared by the memory and attrib families (BPF side only): how many pages a
 * folio added to the page cache holds, and whether it was added by a write (not a miss). */
#ifndef TAILCAUSE_PAGE_CACHE_BPF_H
#define TAILCAUSE_PAGE_CACHE_BPF_H

#include "common.bpf.h"
#include "core_fixes.bpf.h"
#include "syscalls.bpf.h"

/* folio_nr_pages() without kernel helpers. Pages before folios (< 5.16) are counted as 1. */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0;
	struct folio___v6_15 *cur = (void *)folio;
	struct folio___v6_2 *old = (void *)folio;

	if (!bpf_core_type_exists(struct folio))
		return 1;
	/* flags is the first word of struct page/folio on every kernel, whatever its C type. */
	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1; /* not a large folio: the fields below belong to the next page */
	if (bpf_core_field_exists(cur->_nr_pages))
		return BPF_CORE_READ(cur, _nr_pages);
	if (bpf_core_field_exists(old->_folio_nr_pages))
		return BPF_CORE_READ(old, _folio_nr_pages);
	if (bpf_core_field_exists(old->_flags_1))
		return 1UL << (BPF_CORE_READ(old, _flags_1) & 0xff);
	if (bpf_core_field_exists(old->_folio_order))
		return 1UL << BPF_CORE_READ(old, _folio_order);
	return 1;
}

/*
 * Was the page added by a write? filemap_add_folio() fires for reads (read(), readahead, page
 * faults) and for writes alike: write() of a new or uncached range adds the page it is about
 * to overwrite, which is not a miss the writer waits on. The tracepoint has no flag telling
 * them apart, but the task's user-mode register frame does: it records what brought the task
 * into the kernel, a system call (write, pwrite64, writev, pwritev(2), fallocate,
 * copy_file_range: TAILCAUSE_SYS_WRITES_PAGES in the loader's table) or a fault, which
 * native_syscall_nr() tells apart on each architecture. Faults and every other call count as
 * reads. Known limits, accepted: a write() into an uncached partial page reads it from disk
 * but is not counted; copy_file_range() drops its source-side misses with its destination
 * pages; 32-bit (compat) tasks, io_uring workers and kernel threads are counted as reads.
 */
static __always_inline bool added_by_write(struct task_struct *task)
{
	return syscall_flags((struct pt_regs *)bpf_task_pt_regs(task)) & TAILCAUSE_SYS_WRITES_PAGES;
}

#endif
