/* Attribution family, BPF side: page-cache helpers (pages per folio, reads versus writes). */
#ifndef INFERTRACE_ATTRIB_MEMORY_BPF_H
#define INFERTRACE_ATTRIB_MEMORY_BPF_H

#include "common.bpf.h"


/* Field names of older kernels, picked by CO-RE when the newer one is absent. */
struct folio___attrib_old {
	unsigned int _folio_nr_pages; /* 6.2 .. 6.14, 64-bit */
	unsigned long _flags_1;       /* 6.6+: order in the low byte */
	unsigned char _folio_order;   /* 6.1 .. 6.5 */
} __attribute__((preserve_access_index));

/* folio_nr_pages() without kernel helpers (as in memory.bpf.c). */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0;
	struct folio___attrib_old *old = (void *)folio;

	if (!bpf_core_type_exists(struct folio))
		return 1;
	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
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
/* Pages added for a write are not misses the thread waits on (see memory.bpf.c). */
static __always_inline bool added_by_write(struct task_struct *t)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	long nr;

	if (!regs || BPF_CORE_READ(regs, cs) != 0x33)
		return false;
	nr = BPF_CORE_READ(regs, orig_ax);
	switch (nr) {
	case 1: case 18: case 285: case 296: case 326: case 328:
		return true;
	case 20:
		return BPF_CORE_READ(regs, cx) == BPF_CORE_READ(regs, ip);
	default:
		return false;
	}
}
#else
static __always_inline bool added_by_write(struct task_struct *t)
{
	return false;
}
#endif

#endif
