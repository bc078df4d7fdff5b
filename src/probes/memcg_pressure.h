// SPDX-License-Identifier: Apache-2.0
// Memory pressure per memory cgroup: the limit reclaim the memory family's BPF programs time
// (bpf/memory.bpf.c, memcg_reclaim), with each cgroup's usage and limit read from its control
// files (v1 memory.usage_in_bytes / memory.limit_in_bytes, v2 memory.current / memory.max).
// Posted to the evidence board once a second, so a block_io verdict can say "memory cgroup
// /agents/ta at its 2 MiB limit, reclaiming 14 MiB/s", and exported as counters per cgroup.
// With each reading goes the memory stall (PSI, core/host/psi.h): the cgroup's own memory.pressure
// where it has one (v2), else the node's /proc/pressure/memory (a v1 memory cgroup has none),
// so the verdict adds "tasks stalled on memory 23% of the time (PSI)" or "node memory stall
// 12% (PSI)"; both are exported as counters too (none where the kernel has no PSI, or psi=0).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/host/evidence_board.h"
#include "core/aggregate/label_budget.h"
#include "core/record/metrics.h"
#include "core/host/psi.h"
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

// A pressure file's totals, read now; nullopt when it is absent, unreadable (EOPNOTSUPP where
// PSI is off) or not in the kernel's format.
std::optional<core::Psi> read_pressure(const std::string& path);
inline constexpr const char kNodeMemoryPressure[] = "/proc/pressure/memory";

class MemcgPressure {
 public:
  MemcgPressure(CgroupLayout layout, int map_fd, size_t top_k);

  // Reads the kernel's totals and posts each cgroup that reclaimed to the board.
  void harvest(core::EvidenceBoard& board, uint64_t now_ns);
  void collect(core::MetricSet& out);

 private:
  struct Totals {
    uint64_t reclaim_ns = 0, reclaimed_bytes = 0;
    uint64_t stall_some_us = 0, stall_full_us = 0;  // the cgroup's own PSI, where has_psi
    bool has_psi = false;
    Totals& operator+=(const Totals& o) {
      reclaim_ns += o.reclaim_ns;
      reclaimed_bytes += o.reclaimed_bytes;
      stall_some_us += o.stall_some_us;
      stall_full_us += o.stall_full_us;
      has_psi = has_psi || o.has_psi;
      return *this;
    }
  };
  CgroupNames names_;
  int map_fd_;
  core::LabelBudget budget_;
  core::FoldedSeries<Totals> series_;
  std::map<std::string, Totals> totals_;  // by memory cgroup name, cumulative
  std::optional<core::Psi> node_psi_;     // the last good read of kNodeMemoryPressure
};

}  // namespace tailcause::probes
