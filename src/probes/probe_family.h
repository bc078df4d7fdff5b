// SPDX-License-Identifier: Apache-2.0
// The interface every probe family implements: load and attach independently, report
// failures as exceptions with a user-facing reason, fill metrics on a scrape.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/host/evidence_board.h"
#include "core/aggregate/label_budget.h"
#include "core/record/metrics.h"
#include "core/record/stage_record.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"

struct bpf_program;

namespace tailcause::probes {

class ProbeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Signals families exchange through the probe set, read and written on the collector thread.
struct NodeSignals {
  // Some watched cgroup was throttled in the last interval. Atomic: the throttle family clears
  // it when stopped, outside the probe set's lock.
  std::atomic<bool> cgroup_throttling = false;
  core::EvidenceBoard evidence;  // throttling and preemption histories, for glitch verdicts
};

// Sees every attribution record the attrib family decodes (the glitch analyzer), on the
// collector thread.
using RecordObserver = std::function<void(const core::Record&)>;

// A uprobe recipe as its family left it: the files its symbol is attached in, or why none.
struct RecipeDetail {
  std::string library, symbol;
  std::vector<std::string> files;
  std::string why;  // when attached nowhere
};

struct ProbeContext {
  const Features& features;
  const core::Config& config;
  CgroupNames& cgroups;
  NodeSignals& signals;
  const RecordObserver* on_record = nullptr;
};

class ProbeFamily {
 public:
  virtual ~ProbeFamily() = default;
  virtual const char* name() const = 0;

  // Loads and attaches. Throws ProbeError naming what failed; leaves nothing attached then.
  virtual void start(const ProbeContext& ctx) = 0;
  // Detaches and frees; safe to call when not started.
  virtual void stop() = 0;

  // Ring-buffer fd to wait on, or -1; consume() drains it without blocking.
  virtual int event_fd() const { return -1; }
  virtual void consume() {}
  // Periodic work (about every 100 ms): reading files, adjusting samplers.
  virtual void tick(const ProbeContext& ctx) {}

  // Appends this family's series. Called under the probe set's lock, never concurrently
  // with consume() or tick().
  virtual void collect(core::MetricSet& out) = 0;

  // The attached programs, for the BPF run-time self-metrics.
  virtual std::vector<const bpf_program*> programs() const { return {}; }

  // Distinct label values this family folded into "__other__" (LabelBudget::folded()).
  virtual uint64_t folded_label_values() const { return 0; }

  // Its uprobe recipes (the attribution family's), for `tailcause probes`.
  virtual std::vector<RecipeDetail> recipe_details() const { return {}; }
};

}  // namespace tailcause::probes
