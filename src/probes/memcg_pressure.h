// SPDX-License-Identifier: Apache-2.0
// Memory pressure per memory cgroup: the limit reclaim the memory family's BPF programs time
// (bpf/memory.bpf.c, memcg_reclaim), with each cgroup's usage and limit read from its control
// files (v1 memory.usage_in_bytes / memory.limit_in_bytes, v2 memory.current / memory.max).
// Posted to the evidence board once a second, so a block_io verdict can say "memory cgroup
// /agents/ta at its 2 MiB limit, reclaiming 14 MiB/s", and exported as counters per cgroup.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/evidence_board.h"
#include "core/label_budget.h"
#include "core/metrics.h"
#include "probes/cgroup_names.h"

namespace tailcause::probes {

// The memory controller's hierarchy: the v1 memory mount on hybrid hosts, else the unified
// hierarchy when it has the controller; nullopt without one.
std::optional<CgroupLayout> memory_cgroup_layout(const CgroupLayout& tenants);

// A cgroup's memory use and limit, read now (nullopt limit: unlimited or unreadable).
struct MemoryUse {
  uint64_t usage_bytes = 0;
  std::optional<uint64_t> limit_bytes;
};
MemoryUse read_memory_use(const std::string& directory);

class MemcgPressure {
 public:
  MemcgPressure(CgroupLayout layout, int map_fd, size_t top_k);

  // Reads the kernel's totals and posts each cgroup that reclaimed to the board.
  void harvest(core::EvidenceBoard& board, uint64_t now_ns);
  void collect(core::MetricSet& out);

 private:
  struct Totals {
    uint64_t reclaim_ns = 0, reclaimed_bytes = 0;
    Totals& operator+=(const Totals& o) {
      reclaim_ns += o.reclaim_ns;
      reclaimed_bytes += o.reclaimed_bytes;
      return *this;
    }
  };
  CgroupNames names_;
  int map_fd_;
  core::LabelBudget budget_;
  core::FoldedSeries<Totals> series_;
  std::map<std::string, Totals> totals_;  // by memory cgroup name, cumulative
};

}  // namespace tailcause::probes
