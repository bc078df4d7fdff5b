// SPDX-License-Identifier: Apache-2.0
// What `diagnose` and `demo` share: the probe families plus the analysis-only glitch pipeline
// (no journal, no OTLP, no breaker socket or state file), a scrape at the start and one at the
// end, and the diagnosis built from them. The caller decides when it ends (SignalRouting's stop
// flag ends it early).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "daemon/glitch_pipeline.h"
#include "daemon/startup.h"
#include "core/report/diagnosis.h"
#include "core/record/metrics.h"
#include "probes/probe_set.h"

namespace tailcause::daemon {

class Collection {
 public:
  // Attaches the families and starts the analysis; `window_ns` is how far back the stage
  // P50/P99 look. Families that fail to attach are logged; the rest keep working. Throws
  // PipelineError (a StartupError) when the glitch pipeline cannot start.
  Collection(const Startup& startup, uint64_t window_ns);
  ~Collection();
  Collection(const Collection&) = delete;
  Collection& operator=(const Collection&) = delete;

  // The first scrape; the collection's clock starts here.
  void begin();
  // Consumes events for up to `timeout_ms`.
  void poll(int timeout_ms) { set_.poll(timeout_ms); }
  double elapsed_seconds() const;
  // A scrape kept for finish(): series that vanish before the end (the cgroups of a workload
  // that exited and removed them) keep their last values. About once a second is plenty.
  void checkpoint();
  uint64_t glitches() { return pipeline_->glitches(); }

  // The last scrape, then detaches everything. `duration_seconds` (> 0) replaces the measured
  // time for rates (QPS) when the caller knows better.
  core::Diagnosis finish(double duration_seconds = 0);

 private:
  using Clock = std::chrono::steady_clock;
  core::Config config_;
  probes::ProbeSet set_;  // declared before the pipeline: it must outlive it
  std::unique_ptr<GlitchPipeline> pipeline_;
  core::MetricSet before_;
  core::MetricSet latest_;  // the last checkpoint()
  Clock::time_point start_{};
  bool finished_ = false;
};

}  // namespace tailcause::daemon
