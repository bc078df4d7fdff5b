// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Map helpers shared by every BPF program of tailcause (BPF side only). */
#ifndef TAILCAUSE_MAPS_BPF_H
#define TAILCAUSE_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Adds one to slot `index` of a per-CPU __u64 array (a family's lost-events or error counts):
 * per-CPU, so no atomics. */
static __always_inline void count_in(void *percpu_array, __u32 index)
{
	__u64 *n = bpf_map_lookup_elem(percpu_array, &index);

	if (n)
		*n += 1;
}

/* The entry for `key`, created from `zero` on first use; NULL, counted in slot `lost_index`
 * of the per-CPU array `lost`, when it cannot be created (the map is full, or the entry was
 * deleted in between). The insert's own error is not looked at: another CPU creating the
 * entry first (EEXIST) is success, and the lookup after it is the one check that covers
 * every case. */
static __always_inline void *lookup_or_insert(void *map, const void *key, const void *zero,
					      void *lost, __u32 lost_index)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		count_in(lost, lost_index);
	return v;
}

#endif
