/* Page-cache helpers shared by the memory and attrib families (BPF side only): how many pages a
 * folio added to the page cache holds, and whether it was added by a write (not a miss). */
#ifndef TAILCAUSE_PAGE_CACHE_BPF_H
#define TAILCAUSE_PAGE_CACHE_BPF_H

#include "common.bpf.h"

/* Field names of older kernels, picked by CO-RE when the newer one is absent. */
struct folio___v6_2 {
	unsigned int _folio_nr_pages; /* 6.2 .. 6.14, 64-bit */
	unsigned long _flags_1;       /* 6.6+: order in the low byte */
	unsigned char _folio_order;   /* 6.1 .. 6.5 */
} __attribute__((preserve_access_index));

/* folio_nr_pages() without kernel helpers. Pages before folios (< 5.16) are counted as 1. */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0;
	struct folio___v6_2 *old = (void *)folio;

	if (!bpf_core_type_exists(struct folio))
		return 1;
	/* flags is the first word of struct page/folio on every kernel, whatever its C type. */
	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1; /* not a large folio: the fields below belong to the next page */
	if (bpf_core_field_exists(folio->_nr_pages))
		return BPF_CORE_READ(folio, _nr_pages);
	if (bpf_core_field_exists(old->_folio_nr_pages))
		return BPF_CORE_READ(old, _folio_nr_pages);
	if (bpf_core_field_exists(old->_flags_1))
		return 1UL << (BPF_CORE_READ(old, _flags_1) & 0xff);
	if (bpf_core_field_exists(old->_folio_order))
		return 1UL << BPF_CORE_READ(old, _folio_order);
	return 1;
}

#if defined(__TARGET_ARCH_x86)
/*
 * Was the page added by a write? filemap_add_folio() fires for reads (read(), readahead, page
 * faults) and for writes alike: write() of a new or uncached range adds the page it is about
 * to overwrite, which is not a miss the writer waits on. The tracepoint has no flag telling
 * them apart, but the task's user-mode register frame does: it records what brought the task
 * into the kernel. For a syscall, orig_ax holds the x86-64 syscall number; for a page fault it
 * holds the hardware error code, which for a user-mode fault always has bit 2 (user) set. Of
 * the write syscalls below only writev (20 = 0x14 = user | instruction fetch) can look like a
 * fault code, so for it we also require the SYSCALL instruction's signature: it saves the
 * return address in rcx, so rcx == ip. Faults and every other syscall count as reads.
 * Known limits, accepted: a write() into an uncached partial page reads it from disk but is
 * not counted; copy_file_range() drops its source-side misses with its destination pages;
 * 32-bit (compat) tasks, io_uring workers and kernel threads are counted as reads.
 */
static __always_inline bool added_by_write(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr;

	if (!regs || BPF_CORE_READ(regs, cs) != 0x33) /* __USER_CS: a 64-bit user frame */
		return false;
	nr = BPF_CORE_READ(regs, orig_ax);
	switch (nr) {
	case 1:   /* write */
	case 18:  /* pwrite64 */
	case 285: /* fallocate */
	case 296: /* pwritev */
	case 326: /* copy_file_range */
	case 328: /* pwritev2 */
		return true;
	case 20: /* writev, or a user instruction-fetch fault */
		return BPF_CORE_READ(regs, cx) == BPF_CORE_READ(regs, ip);
	default:
		return false;
	}
}
#else
/* Fallback on other architectures: every added page counts as a miss, writes included. */
static __always_inline bool added_by_write(struct task_struct *task)
{
	return false;
}
#endif

#endif
