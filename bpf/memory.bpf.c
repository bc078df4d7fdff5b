/* Memory family: page-cache misses (pages the page cache had to add for a read or a fault) and
 * major faults, counted per process and cgroup in the context of the task that caused them. */
#include "common.bpf.h"
#include "memory.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader: false where bpf_task_pt_regs() is missing (before 5.15), and then pages
 * added by writes count as misses too. */
const volatile bool exclude_writes = true;

/* Key: {cgroup id, tgid}. Value: that process's per-CPU counts and name. Read (and entries of
 * exited processes deleted) by MemoryProbe::harvest; a full map drops the event, counted in
 * memory_events_lost. Preallocated: inserting never allocates on the fault path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, INFERTRACE_MEMORY_MAX_PROCESSES);
	__type(key, struct memory_key);
	__type(value, struct memory_value);
} process_memory SEC(".maps");

/* Key: 0. Value: per-CPU count of events dropped because process_memory was full; exported as
 * infertrace_events_lost_total{source="memory"}. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} memory_events_lost SEC(".maps");

/* Field names of older kernels, picked by CO-RE when the newer one is absent. */
struct folio___v6_2 {
	unsigned int _folio_nr_pages; /* 6.2 .. 6.14, 64-bit */
	unsigned long _flags_1;       /* 6.6+: order in the low byte */
	unsigned char _folio_order;   /* 6.1 .. 6.5 */
} __attribute__((preserve_access_index));

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *lost = bpf_map_lookup_elem(&memory_events_lost, &zero);

	if (lost)
		(*lost)++;
}

static __always_inline void account(__u64 misses, __u64 major_faults)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct memory_key key = {
		.cgroup_id = task_cgroup_id(task),
		.tgid = bpf_get_current_pid_tgid() >> 32,
	};
	struct memory_value *v = bpf_map_lookup_elem(&process_memory, &key);

	if (!v) {
		static const struct memory_value zero;

		/* EEXIST (another CPU won the race) is fine; a full map shows up as a failed lookup. */
		bpf_map_update_elem(&process_memory, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&process_memory, &key);
		if (!v) {
			count_lost();
			return;
		}
	}
	v->page_cache_misses += misses;
	v->major_faults += major_faults;
	/* Refreshed on every event so that a process that exec()s is soon shown by its new name. */
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	bpf_core_read_str(v->comm, sizeof(v->comm), &leader->comm);
	v->comm_ns = bpf_ktime_get_ns();
}

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
static __always_inline bool added_by_write(void)
{
	struct pt_regs *regs;
	long nr;

	if (!exclude_writes)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
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
static __always_inline bool added_by_write(void)
{
	return false;
}
#endif

static __always_inline int on_page_cache_add(struct folio *folio)
{
	if (!added_by_write())
		account(folio_pages(folio), 0);
	return 0;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(page_cache_add_btf, struct folio *folio)
{
	return on_page_cache_add(folio);
}

SEC("raw_tp/mm_filemap_add_to_page_cache")
int BPF_PROG(page_cache_add_raw, struct folio *folio)
{
	return on_page_cache_add(folio);
}

/* Attached to a per-CPU PERF_COUNT_SW_PAGE_FAULTS_MAJ event with sample_period 1: runs once
 * per major fault, in the faulting task. */
SEC("perf_event")
int major_fault(struct bpf_perf_event_data *ctx)
{
	account(0, 1);
	return 0;
}
