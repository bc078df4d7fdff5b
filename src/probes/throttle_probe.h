// SPDX-License-Identifier: Apache-2.0
// CFS bandwidth throttling per cgroup, read from the cgroup files the kernel already keeps
// (cpu.stat, the quota, the weight): no BPF program of its own. Every cgroup below the
// layout's root is read on tick(), at most every config.throttle.interval_ms.
//
// Series (cgroup = CgroupNames name, top-K by throttled time, the rest folded into
// "__other__"; counters stay monotonic when cgroups vanish or are re-created):
//   tailcause_cpu_throttled_seconds_total, tailcause_cpu_throttled_periods_total,
//   tailcause_cpu_periods_total    cgroups whose cpu.stat carries bandwidth data
//   tailcause_cpu_quota_seconds    CPU time allowed per period; absent when unlimited
//   tailcause_cpu_period_seconds   the enforcement period
//   tailcause_cpu_weight           cpu.weight, or v1 cpu.shares on the v2 scale
// Also sets NodeSignals::cgroup_throttling on every read: whether any cgroup's nr_throttled
// grew since the previous read.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "core/host/cpu_stat.h"
#include "core/aggregate/label_budget.h"
#include "probes/probe_family.h"

namespace tailcause::probes {

class ThrottleProbe : public ProbeFamily {
 public:
  const char* name() const override { return "throttle"; }
  void start(const ProbeContext& ctx) override;
  void stop() override;
  void tick(const ProbeContext& ctx) override;
  void collect(core::MetricSet& out) override;
  uint64_t folded_label_values() const override { return budget_ ? budget_->folded() : 0; }

 private:
  // What one read found for one cgroup.
  struct Reading {
    std::optional<core::CpuBandwidthStats> totals;  // monotonic, see CpuStatContinuity
    std::optional<core::CpuLimit> limit;
    std::optional<uint64_t> weight;
  };

  void read_now(NodeSignals& signals);  // every cgroup, regardless of the interval
  std::optional<Reading> read_cgroup(uint64_t id, const std::string& name);
  void admit_heaviest_first();
  void fold();

  bool started_ = false;
  CgroupNames* cgroups_ = nullptr;
  NodeSignals* signals_ = nullptr;  // cleared on stop(): a stopped family reports no throttling
  std::chrono::milliseconds interval_{1000};
  std::chrono::steady_clock::time_point last_read_{};
  bool have_previous_read_ = false;

  std::map<std::string, Reading> current_;                           // the last read, by name
  std::map<std::string, core::CpuStatContinuity> continuity_;        // by name, while it exists
  std::unordered_map<std::string, uint64_t> previous_nr_throttled_;  // totals, by name

  // The cgroup label's budget, shared by all six series so a cgroup is kept or folded in all.
  std::unique_ptr<core::LabelBudget> budget_;
  std::unique_ptr<core::FoldedSeries<core::CpuBandwidthStats>> folded_;
  std::set<std::string> admitted_;                           // names with their own series
  std::map<std::string, core::CpuBandwidthStats> counters_;  // folded, ready for collect()
};

std::unique_ptr<ProbeFamily> make_throttle_probe();

}  // namespace tailcause::probes
