// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family, BPF side: process lifetime. Exits and execs end a thread's span and
 * clean up its process's requests; new mappings mark a process for user space's discovery of
 * probes and recipe symbols. Included by attrib.bpf.c. */
#ifndef TAILCAUSE_ATTRIB_LIFETIME_BPF_H
#define TAILCAUSE_ATTRIB_LIFETIME_BPF_H

/* Processes that asked for a new mapping, or exited, since user space last looked (key: tgid),
 * so the discovery looks again only at them (a dlopen of a library with probes or recipe
 * symbols, a binary no process maps any more) instead of reading every process's
 * /proc/PID/stat each second. Full: the overflow flag tells user space to look at every
 * process once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ATTRIB_MAX_REMAPPED);
	__type(key, __u32);
	__type(value, __u8);
} attrib_remapped SEC(".maps");

__u32 attrib_remapped_overflow = 0;

static __always_inline void note_remapped(__u32 tgid)
{
	__u8 one = 1;

	if (report_exec &&
	    bpf_map_update_elem(&attrib_remapped, &tgid, &one, BPF_NOEXIST) == -E2BIG)
		attrib_remapped_overflow = 1;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(attrib_exit_btf, struct task_struct *p)
{
	__u32 tgid;

	abort_span(p);
	/* The last thread of the process: its requests can be cleaned up. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	tgid = BPF_CORE_READ(p, tgid);
	note_remapped(tgid);
	if (bpf_map_lookup_elem(&attrib_processes, &tgid)) {
		bpf_map_delete_elem(&attrib_processes, &tgid);
		emit_process(ATTRIB_REC_PROCESS_EXIT, tgid,
			     submit_flags(sizeof(struct attrib_process_record)));
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(attrib_exec_btf, struct task_struct *p)
{
	abort_span(p);
	if (report_exec) /* wake the reader now: attaching early catches the first requests */
		emit_process(ATTRIB_REC_EXEC, BPF_CORE_READ(p, tgid), BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* Every mmap without a fixed address picks its place here, a dlopen's first among them; so do
 * anonymous mappings (malloc's large blocks, thread stacks), which only cost a marked process a
 * look at its /proc/PID/stat. Optional: the loader leaves it out where the kernel lacks it, and
 * user space then checks every process each second. */
SEC("tp_btf/vm_unmapped_area")
int BPF_PROG(attrib_remap_btf)
{
	note_remapped(bpf_get_current_pid_tgid() >> 32);
	return 0;
}

#endif
