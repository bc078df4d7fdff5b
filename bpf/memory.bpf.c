// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Memory family: page-cache misses (pages the page cache had to add for a read or a fault) and
 * major faults, counted per process and cgroup in the context of the task that caused them. */
#include "common.bpf.h"
#include "memory.h"
#include "page_cache.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: false where bpf_task_pt_regs() is missing (before 5.15), and then pages
 * added by writes count as misses too. */
const volatile bool exclude_writes = true;

/* Key: {cgroup id, tgid}. Value: that process's per-CPU counts and name. Read (and entries of
 * exited processes deleted) by MemoryProbe::harvest; a full map drops the event, counted in
 * memory_events_lost. Preallocated: inserting never allocates on the fault path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, TAILCAUSE_MEMORY_MAX_PROCESSES);
	__type(key, struct memory_key);
	__type(value, struct memory_value);
} process_memory SEC(".maps");

/* Key: 0. Value: per-CPU count of events dropped because process_memory was full; exported as
 * tailcause_events_lost_total{source="memory"}. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} memory_events_lost SEC(".maps");

static const struct memory_value zero_value;

static __always_inline void account(__u64 misses, __u64 major_faults)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct memory_key key = {
		.cgroup_id = task_cgroup_id(task),
		.tgid = bpf_get_current_pid_tgid() >> 32,
	};
	struct memory_value *v =
		lookup_or_insert(&process_memory, &key, &zero_value, &memory_events_lost, 0);

	if (!v)
		return;
	v->page_cache_misses += misses;
	v->major_faults += major_faults;
	/* Refreshed on every event so that a process that exec()s is soon shown by its new name. */
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	bpf_core_read_str(v->comm, sizeof(v->comm), &leader->comm);
	v->comm_ns = bpf_ktime_get_ns();
}

static __always_inline int on_page_cache_add(struct folio *folio)
{
	if (!exclude_writes || !added_by_write(bpf_get_current_task_btf()))
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

/* ---- Memory cgroup limit reclaim ---------------------------------------------------------- */

/* Key: memory cgroup id (see task_memcg_id). Value: per-CPU reclaim totals; read by
 * MemcgPressure::harvest(). Full: dropped and counted. Not preallocated: few cgroups reclaim. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, TAILCAUSE_MEMCG_MAX);
	__type(key, __u64);
	__type(value, struct memcg_reclaim);
} memcg_reclaim SEC(".maps");

/* Key: tid. Value: when its reclaim pass began (passes do not nest). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} reclaim_started SEC(".maps");

static const struct memcg_reclaim zero_reclaim;

/* The memory cgroup of `t` (v1 or v2: the memory controller's css, which on v2 is the nearest
 * ancestor with the controller enabled, where the limit lives), as its directory's kernfs id in
 * the memory hierarchy. 0 without the memory controller. */
static __always_inline __u64 task_memcg_id(struct task_struct *t)
{
	struct css_set *cgroups = BPF_CORE_READ(t, cgroups);
	struct cgroup_subsys_state *css = NULL;
	int id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	bpf_probe_read_kernel(&css, sizeof(css),
			      (void *)cgroups + bpf_core_field_offset(struct css_set, subsys) +
				      id * sizeof(void *));
	if (!css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

static __always_inline int on_memcg_reclaim_begin(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&reclaim_started, &tid, &now, BPF_ANY);
	return 0;
}

static __always_inline int on_memcg_reclaim_end(unsigned long nr_reclaimed)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&reclaim_started, &tid);
	__u64 now = bpf_ktime_get_ns(), took;
	__u64 memcg;
	struct memcg_reclaim *v;

	if (!start)
		return 0; /* began before we attached */
	took = now > *start ? now - *start : 0;
	bpf_map_delete_elem(&reclaim_started, &tid);
	memcg = task_memcg_id((struct task_struct *)bpf_get_current_task());
	v = lookup_or_insert(&memcg_reclaim, &memcg, &zero_reclaim, &memory_events_lost, 0);
	if (!v)
		return 0;
	v->reclaim_ns += took;
	v->reclaimed_pages += nr_reclaimed;
	v->reclaims += 1;
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_reclaim_begin_btf)
{
	return on_memcg_reclaim_begin();
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_reclaim_begin_raw)
{
	return on_memcg_reclaim_begin();
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_reclaim_end_btf, unsigned long nr_reclaimed)
{
	return on_memcg_reclaim_end(nr_reclaimed);
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_reclaim_end_raw, unsigned long nr_reclaimed)
{
	return on_memcg_reclaim_end(nr_reclaimed);
}

/* Attached to a per-CPU PERF_COUNT_SW_PAGE_FAULTS_MAJ event with sample_period 1: runs once
 * per major fault, in the faulting task. */
SEC("perf_event")
int major_fault(struct bpf_perf_event_data *ctx)
{
	account(0, 1);
	return 0;
}
