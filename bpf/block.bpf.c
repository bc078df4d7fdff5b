// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Block family: latency of each block request from issue to the driver until completion, and
 * the bytes completed, per whole disk and operation; and per (issuing cgroup, disk), so that a
 * stage slowed in block I/O can name whose I/O kept the disk busy. */
#include "common.bpf.h"
#include "block.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: kernels before 5.11 pass (queue, request) to block_rq_issue and
 * block_rq_insert (one change removed the queue from both). */
const volatile bool rq_issue_has_queue = false;

struct issue {
	__u64 ns;     /* bpf_ktime_get_ns() at issue */
	__u64 cgroup; /* the issuing task's: the submitter for direct and synchronous I/O; a
		       * flusher's or kblockd's (usually the root) for writeback and deferred
		       * dispatch */
};

/* Key: the request pointer. Value: its issue. Written at issue, read and
 * deleted at completion. Requests come from per-device preallocated tag sets, so live keys are
 * few; LRU so that an entry whose completion was never traced (a request freed on device
 * removal) ages out instead of filling the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct issue);
} block_issue_ns SEC(".maps");

/* Key: {disk major, first minor, op}. Value: per-CPU latency histogram (ns) and bytes. Read by
 * BlockProbe::collect; entries are never deleted (disks x 5 ops). Not preallocated: with few
 * keys, per-CPU memory is spent only on disks that do I/O. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct block_key);
	__type(value, struct block_value);
} block_io SEC(".maps");

/* Key: {issuing cgroup, disk}. Value: per-CPU requests, bytes and busy time. Read by
 * BlockProbe::tick for the evidence board; entries of vanished cgroups are deleted there. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct block_cgroup_key);
	__type(value, struct block_cgroup_value);
} block_cgroup_io SEC(".maps");

/* Key: 0. Value: per-CPU count of samples dropped because a map was full; exported as
 * tailcause_events_lost_total{source="block"}. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} block_events_lost SEC(".maps");

static const struct block_value zero_value;
static const struct block_cgroup_value zero_cgroup_value;

static __always_inline __u32 op_of(struct request *rq)
{
	/* REQ_OP_BITS is 8 on every kernel with blk_opf_t / req_op(). */
	switch (BPF_CORE_READ(rq, cmd_flags) & 0xff) {
	case 0: return TAILCAUSE_BLOCK_OP_READ;	   /* REQ_OP_READ */
	case 1: return TAILCAUSE_BLOCK_OP_WRITE;   /* REQ_OP_WRITE */
	case 2: return TAILCAUSE_BLOCK_OP_FLUSH;   /* REQ_OP_FLUSH */
	case 3: return TAILCAUSE_BLOCK_OP_DISCARD; /* REQ_OP_DISCARD */
	default: return TAILCAUSE_BLOCK_OP_OTHER;
	}
}

static __always_inline struct gendisk *disk_of(struct request *rq)
{
	struct request___rq_disk *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return BPF_CORE_READ(rq, q, disk);
}

static __always_inline __u64 current_cgroup(void)
{
	return task_cgroup_id((struct task_struct *)bpf_get_current_task());
}

/* Insertion into an I/O scheduler runs in the submitter's context (its plug flushed, or the
 * bio queued directly); the dispatch that issues the request later may run in anyone's, often
 * kblockd's. So the cgroup is taken here when there is an insertion, at issue otherwise. */
static __always_inline int on_insert(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct issue issue = {.ns = 0, .cgroup = current_cgroup()};

	if (bpf_map_update_elem(&block_issue_ns, &key, &issue, BPF_ANY))
		count_in(&block_events_lost, 0);
	return 0;
}

static __always_inline int on_issue(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct issue *inserted = bpf_map_lookup_elem(&block_issue_ns, &key);
	struct issue issue = {.ns = bpf_ktime_get_ns()};

	/* A requeued request is issued again: its time restarts, its submitter stays. */
	issue.cgroup = inserted && inserted->cgroup ? inserted->cgroup : current_cgroup();
	if (bpf_map_update_elem(&block_issue_ns, &key, &issue, BPF_ANY))
		count_in(&block_events_lost, 0);
	return 0;
}

static __always_inline int on_complete(struct request *rq, unsigned int nr_bytes)
{
	__u64 rq_key = (__u64)rq;
	struct issue *issued = bpf_map_lookup_elem(&block_issue_ns, &rq_key);
	__u64 issue_ns = issued ? issued->ns : 0;
	__u64 cgroup = issued ? issued->cgroup : 0;
	struct gendisk *disk = disk_of(rq);
	struct block_value *v;

	if (issued)
		bpf_map_delete_elem(&block_issue_ns, &rq_key);
	if (!disk)
		return 0; /* a passthrough request with no disk: nothing to name it by */

	struct block_key key = {
		.major = BPF_CORE_READ(disk, major),
		.minor = BPF_CORE_READ(disk, first_minor),
		.op = op_of(rq),
	};
	v = lookup_or_insert(&block_io, &key, &zero_value, &block_events_lost, 0);
	if (!v)
		return 0;
	/* Bytes on every completion (a request may complete in parts), latency once per request:
	 * the first completion consumed the issue time. Requests issued before attach have none. */
	v->bytes += nr_bytes;
	if (!issue_ns)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 took = now > issue_ns ? now - issue_ns : 0;

	log2_hist_add(&v->latency_ns, took);

	struct block_cgroup_key ckey = {.cgroup = cgroup, .major = key.major, .minor = key.minor};
	struct block_cgroup_value *c = lookup_or_insert(&block_cgroup_io, &ckey, &zero_cgroup_value,
							&block_events_lost, 0);
	if (c) {
		c->requests++;
		c->bytes += nr_bytes; /* the first part of a request completed in parts */
		c->busy_ns += took;
	}
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_issue_btf)
{
	return on_issue((struct request *)(rq_issue_has_queue ? ctx[1] : ctx[0]));
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(block_issue_raw)
{
	return on_issue((struct request *)(rq_issue_has_queue ? ctx[1] : ctx[0]));
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(block_insert_btf)
{
	return on_insert((struct request *)(rq_issue_has_queue ? ctx[1] : ctx[0]));
}

SEC("raw_tp/block_rq_insert")
int BPF_PROG(block_insert_raw)
{
	return on_insert((struct request *)(rq_issue_has_queue ? ctx[1] : ctx[0]));
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, nr_bytes);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(block_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, nr_bytes);
}
