// SPDX-License-Identifier: Apache-2.0
// Runs the probe families a configuration asks for: starts them independently (one that
// fails is reported and the rest keep working), applies new configurations without touching
// families whose settings did not change, drives their events and ticks, and collects their
// metrics plus the daemon's self-metrics.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/record/metrics.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"
#include "probes/handles.h"
#include "probes/probe_family.h"

namespace tailcause::probes {

struct FamilyStatus {
  std::string name;
  bool enabled = false;
  bool attached = false;
  std::string error;        // why it is not attached, when enabled
  uint64_t generation = 0;  // bumps every time the family is (re)started
};

class ProbeSet {
 public:
  ProbeSet(Features features, CgroupLayout layout);
  ~ProbeSet();

  // Starts, restarts or stops families to match `config`. Never throws for a family that
  // fails: it is reported in status() and as tailcause_probe_attached 0.
  void apply(const core::Config& config);
  void stop_all();

  // Waits up to `timeout_ms` for ring-buffer events, consumes them, and runs due ticks.
  void poll(int timeout_ms);

  // Every family's series plus the self-metrics. Thread-safe against poll()/apply().
  void collect(core::MetricSet& out);

  std::vector<FamilyStatus> status() const;
  // Every running family's uprobe recipes, with the files each is attached in or why not.
  std::vector<RecipeDetail> recipe_details() const;

  // Every attribution record, from families (re)started after this call; set it before apply().
  void set_record_observer(RecordObserver observer) { record_observer_ = std::move(observer); }
  // The families' shared signals and evidence: only touch them from the record observer (it
  // runs inside poll(), on the collector thread, under the set's lock).
  const NodeSignals& signals() const { return signals_; }
  // A cgroup id's name ("/agents/a"), "" when unknown; also from the record observer only.
  std::string cgroup_name(uint64_t id) const;
  const Features& features() const { return features_; }
  const CgroupLayout& layout() const { return layout_; }

 private:
  struct Running {
    std::unique_ptr<ProbeFamily> family;
    FamilyStatus status;
  };
  // What apply() changes, planned under mu_: the families taken out to stop, those to start.
  struct Reload {
    std::vector<std::unique_ptr<ProbeFamily>> stopping;
    std::unique_ptr<CgroupNames> old_cgroups;  // outlives the families stopped
    std::vector<size_t> to_start;              // indices in known_families()
  };
  // The families loaded, by index in known_families(): null where the start failed, with why.
  struct Loaded {
    std::vector<std::unique_ptr<ProbeFamily>> families;
    std::vector<std::string> errors;
  };
  ProbeContext context();
  Reload plan_reload(const core::Config& config);                     // takes mu_
  Loaded load_families(const std::vector<size_t>& to_start);          // outside mu_
  void install(const std::vector<size_t>& to_start, Loaded& loaded);  // takes mu_
  void rebuild_epoll();                                               // under mu_
  static void stop_in_parallel(std::vector<std::unique_ptr<ProbeFamily>>& families);
  void set_bpf_stats(bool on);

  std::mutex apply_mu_;    // serialises apply() and stop_all(); taken before mu_
  mutable std::mutex mu_;  // everything below; never held while families load or stop
  Features features_;
  CgroupLayout layout_;
  core::Config config_;
  bool configured_ = false;
  std::unique_ptr<CgroupNames> cgroups_;
  NodeSignals signals_;
  RecordObserver record_observer_;
  std::vector<Running> families_;  // in known_families() order
  Fd epoll_fd_;
  std::vector<int> polled_fds_;  // registered in epoll_fd_
  Fd stats_fd_;                  // holds kernel BPF run-time statistics on while open
  std::chrono::steady_clock::time_point last_tick_{};
};

}  // namespace tailcause::probes
