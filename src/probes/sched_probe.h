// SPDX-License-Identifier: Apache-2.0
// Scheduler probe family: run-queue latency, off-CPU time by state and noisy-neighbour
// preemptions per cgroup, and the sampled run-queue length per CPU (bpf/sched.bpf.c).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "probes/handles.h"
#include "probes/probe_family.h"

struct sched_bpf;
struct bpf_link;

namespace tailcause::probes {

TAILCAUSE_SKELETON_HANDLE(sched_bpf);

class SchedProbe final : public ProbeFamily {
 public:
  struct Options {
    // How often collect() looks for removed cgroups to delete from the bounded maps.
    std::chrono::seconds forget_removed_every{10};
  };
  SchedProbe() : SchedProbe(Options{}) {}
  explicit SchedProbe(Options options);
  ~SchedProbe() override;

  const char* name() const override { return "sched"; }
  void start(const ProbeContext& ctx) override;
  void stop() override;
  // Switches the run-queue length sampler between sparse and dense from the throttle signal.
  void tick(const ProbeContext& ctx) override;
  void collect(core::MetricSet& out) override;
  std::vector<const bpf_program*> programs() const override;
  uint64_t folded_label_values() const override;

 private:
  struct Series;  // label budgets and folded series, reset on each start()

  // The run-queue length sampler: one perf-event link (owning its fd) per sampled CPU, all at
  // one rate. A new rate is a new set of events (tick()).
  struct Sampler {
    std::vector<LinkHandle> links;
    std::vector<int> cpus;
    bpf_program* prog = nullptr;  // what the links run
  };
  // A cpu-clock event firing `hz` times a second on every online CPU, each running `prog`;
  // empty, with `failure` said, when one of them cannot be opened or attached.
  static Sampler attach_runqlen_sampler(bpf_program* prog, uint32_t hz, std::string& failure);
  // The same at start(), which says once why there is none.
  Sampler start_runqlen_sampler(bpf_program* prog, uint32_t hz);
  std::optional<std::string> cgroup_name(uint64_t id);
  void collect_cgroups(core::MetricSet& out);
  void collect_preemptions(core::MetricSet& out);
  void collect_runqlen(core::MetricSet& out);
  void forget_removed_cgroups();
  // Posts the preemptions since the last call to the evidence board (about once a second).
  void post_preemption_evidence(NodeSignals& signals);

  Options options_;
  Handle<sched_bpf> skel_;
  CgroupNames* cgroups_ = nullptr;
  Sampler sampler_;  // after skel_: detached before the program goes
  bool dense_ = false;
  bool warned_no_runqlen_ = false;
  bool warned_rate_ = false;
  std::unique_ptr<Series> series_;
  // Names are resolved once per id so that a removed cgroup keeps its label until it is
  // forgotten; ids never resolved remember when they were first seen.
  std::unordered_map<uint64_t, std::string> names_;
  std::unordered_map<uint64_t, std::chrono::steady_clock::time_point> unresolved_since_;
  std::chrono::steady_clock::time_point last_gc_{};
  std::chrono::steady_clock::time_point last_evidence_{};
  struct PostedPair {
    uint64_t preemptions = 0, wait_ns = 0;
  };
  using PairCounts = std::map<std::pair<uint64_t, uint64_t>, PostedPair>;  // (victim, by)
  // Every pair's counters summed over CPUs: the pair map's, and each cgroup's own (victim ==
  // by), which BPF keeps in the cgroup's stats entry.
  PairCounts read_pairs() const;
  PairCounts posted_preemptions_;
  bool preemptions_baselined_ = false;  // the first read after attaching was taken
};

std::unique_ptr<ProbeFamily> make_sched_probe();

}  // namespace tailcause::probes
