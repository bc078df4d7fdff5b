// SPDX-License-Identifier: Apache-2.0
// Memory probe family: page-cache misses and major faults per cgroup and per process
// (bpf/memory.bpf.c). Kernel counts live in a per-process map; user space folds them into
// monotonic totals per (cgroup, process name), so exited processes can leave the map.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "probes/handles.h"
#include "probes/memcg_pressure.h"
#include "probes/probe_family.h"

struct memory_bpf;
struct bpf_link;

namespace tailcause::probes {

TAILCAUSE_SKELETON_HANDLE(memory_bpf);

struct MemoryCounts {
  uint64_t page_cache_misses = 0;
  uint64_t major_faults = 0;
  MemoryCounts& operator+=(const MemoryCounts& o) {
    page_cache_misses += o.page_cache_misses;
    major_faults += o.major_faults;
    return *this;
  }
};

class MemoryProbe final : public ProbeFamily {
 public:
  MemoryProbe();
  ~MemoryProbe() override;

  const char* name() const override { return "memory"; }
  void start(const ProbeContext& ctx) override;
  void stop() override;
  // Harvests the kernel map every few seconds, so exited processes free their entries even
  // when nobody scrapes.
  void tick(const ProbeContext& ctx) override;
  void collect(core::MetricSet& out) override;
  std::vector<const bpf_program*> programs() const override;
  uint64_t folded_label_values() const override;

  // Whether major faults are counted (needs software perf events).
  bool counts_major_faults() const { return !fault_links_.empty(); }
  // Whether the kernel map holds an entry of process `tgid`; entries of exited processes are
  // deleted by the next harvest, once their counts are in the totals.
  bool tracks_process(uint32_t tgid) const;

 private:
  struct Series;  // label budgets and folded series, reset on each start()
  using ProcessKey = std::pair<uint64_t, uint32_t>;    // (cgroup id, tgid), as in the map
  using TotalsKey = std::pair<uint64_t, std::string>;  // (cgroup id, process name)

  void harvest();
  std::string cgroup_name(uint64_t id);
  void forget_removed_cgroups();

  Handle<memory_bpf> skel_;
  CgroupNames* cgroups_ = nullptr;
  std::vector<LinkHandle> fault_links_;   // each owns its perf event fd
  std::unique_ptr<MemcgPressure> memcg_;  // null where limit reclaim is not timed
  uint32_t max_processes_ = 0;
  std::unique_ptr<Series> series_;
  // Per kernel entry, the counts already added to totals_ (deltas make deletions safe).
  std::map<ProcessKey, MemoryCounts> accounted_;
  // Monotonic totals; survive the exit of the processes that made them.
  std::map<TotalsKey, MemoryCounts> totals_;
  std::unordered_map<uint64_t, std::string> names_;  // resolved once, kept after removal
  std::unordered_map<uint64_t, std::chrono::steady_clock::time_point> unresolved_since_;
  std::chrono::steady_clock::time_point last_harvest_{};
  std::chrono::steady_clock::time_point last_gc_{};
  std::chrono::steady_clock::time_point last_memcg_{};
};

std::unique_ptr<ProbeFamily> make_memory_probe();

}  // namespace tailcause::probes
