// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: memory. Reclaim in a span thread's own context, page-cache
 * misses and major faults, added to the thread's context. Included by attrib.bpf.c. */
#ifndef TAILCAUSE_ATTRIB_MEMORY_BPF_H
#define TAILCAUSE_ATTRIB_MEMORY_BPF_H

/* A span thread reclaiming memory in its own context (direct reclaim, or its memory cgroup's
 * limit reclaim, which does not nest in it): its CPU time meanwhile is block_io (add()), and so
 * is the wait of its process's span threads queued behind it (reclaim_part()). Waits inside
 * reclaim are classified as they always are. Optional: the loader leaves these out where the
 * kernel lacks the tracepoints. */
static __always_inline int reclaim_edge(bool begin)
{
	struct attrib_task *c;

	if (!attrib_active_spans || !spans_in_process(current_tgid()))
		return 0;
	c = bpf_task_storage_get(&attrib_tasks, bpf_get_current_task_btf(), 0, 0);
	if (!c || c->reclaiming == begin || (begin && !c->active))
		return 0;
	split_on_cpu(c);
	c->reclaiming = begin;
	reclaim_on_this_cpu(begin, bpf_ktime_get_ns(), current_tgid());
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(attrib_direct_reclaim_begin_btf)
{
	return reclaim_edge(true);
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(attrib_direct_reclaim_end_btf)
{
	return reclaim_edge(false);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(attrib_memcg_reclaim_begin_btf)
{
	return reclaim_edge(true);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(attrib_memcg_reclaim_end_btf)
{
	return reclaim_edge(false);
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(attrib_page_cache_add_btf, struct folio *folio)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct attrib_task *c;

	if (!attrib_active_spans || !spans_in_process(current_tgid()))
		return 0;
	c = bpf_task_storage_get(&attrib_tasks, t, 0, 0);
	if (c && c->active && !added_by_write(t))
		c->span.page_cache_misses += folio_pages(folio);
	return 0;
}

/* Attached to a per-CPU PERF_COUNT_SW_PAGE_FAULTS_MAJ event with sample_period 1. */
SEC("perf_event")
int attrib_major_fault(struct bpf_perf_event_data *ctx)
{
	struct attrib_task *c;

	if (!attrib_active_spans || !spans_in_process(current_tgid()))
		return 0;
	c = current_context(false);
	if (c && c->active) {
		c->span.major_faults += 1;
		note_anomaly(c, ATTRIB_ANOMALY_MAJOR_FAULT, bpf_ktime_get_ns(), 0);
	}
	return 0;
}

#endif
