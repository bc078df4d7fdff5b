// SPDX-License-Identifier: Apache-2.0
// Small helpers every family's loader uses around libbpf skeletons.
#pragma once

#include <bpf/libbpf.h>

#include <bpf/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/record/metrics.h"
#include "probes/features.h"
#include "probes/probe_family.h"

namespace tailcause::probes {

// Routes libbpf's own messages to the log (debug level) and keeps the last ones, so a load
// failure can say what the verifier said. Idempotent.
void install_libbpf_logger();
std::string last_libbpf_messages();

// Open options for a skeleton: relocate against `features.btf_path` when it is not the
// kernel's own BTF.
bpf_object_open_opts open_options(const Features& features);

// Autoloads the `_btf` flavour of each tracepoint handler when BTF tracepoints work, else the
// `_raw` one (see bpf/common.bpf.h); programs without either suffix are left alone.
void select_tracepoint_flavour(bpf_object* obj, const Features& features);

// Throws ProbeError("<family>: <what>: <strerror(-err)>[: libbpf said ...]") when err < 0.
void check(int err, const char* family, const std::string& what);

// Number of per-CPU copies a per-CPU map value has (libbpf_num_possible_cpus, cached).
int possible_cpus();

// The keys of a hash map, bounded by `capacity` in case entries churn while we walk it.
template <typename K>
std::vector<K> map_keys(int fd, size_t capacity) {
  std::vector<K> keys;
  K cur{}, next{};
  const K* prev = nullptr;
  while (keys.size() < capacity && bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    cur = next;
    prev = &cur;
  }
  return keys;
}

// The per-CPU copies of the value at `key` in a per-CPU map; empty if the entry vanished.
template <typename V>
std::vector<V> percpu_values(int fd, const void* key) {
  std::vector<V> values(possible_cpus());
  if (bpf_map_lookup_elem(fd, key, values.data()) != 0) values.clear();
  return values;
}

// Sum over CPUs of a per-CPU __u64 counter (e.g. a family's lost-events slot).
uint64_t percpu_sum(int fd, uint32_t key);

// Appends tailcause_events_lost_total{source} (map full, ring buffer full).
void add_events_lost(core::MetricSet& out, const char* source, uint64_t lost);

// The programs of an object that are loaded (autoload on), for the run-time self-metrics.
std::vector<const bpf_program*> loaded_programs(const bpf_object* obj);

}  // namespace tailcause::probes
