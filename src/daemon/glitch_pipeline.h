// SPDX-License-Identifier: Apache-2.0
// The daemon's glitch path, from the attribution records to the sinks: the GlitchAnalyzer
// (detectors and verdicts), the IncidentDetector (sustained slowdowns), the journal (batched about
// once a second on its own thread), the OTLP exporter, the circuit breaker's socket and its state
// file. the daemon uses all of it; `diagnose` and `demo` only the analyzer. Thread-safe: records
// arrive on the collector thread, scrapes and socket requests on others.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "daemon/startup.h"
#include "core/detect/glitch_analyzer.h"
#include "core/detect/incident_detector.h"
#include "core/record/metrics.h"
#include "core/aggregate/stage_heatmap.h"
#include "export/journal.h"
#include "probes/probe_set.h"

namespace tailcause::exporter {
class OtlpExporter;
class BreakerSocket;
}  // namespace tailcause::exporter

namespace tailcause::probes {
class RouteLookup;
}  // namespace tailcause::probes

namespace tailcause::daemon {

struct PipelineOptions {
  bool journal = true;          // write glitches to journal.path (when set)
  bool otlp = true;             // export traces to otlp.endpoint (when set)
  bool breaker_socket = true;   // serve breaker.socket (when set)
  bool persist_breaker = true;  // restore and save breaker.state_file (when set)
  uint64_t summary_window_ns = 60'000'000'000;
};

// A sink that cannot start (journal, OTLP endpoint, breaker socket): a start-up failure.
struct PipelineError : StartupError {
  using StartupError::StartupError;
};

class GlitchPipeline {
 public:
  // Opens the journal, restores the breaker, binds the socket; throws PipelineError with a
  // user-facing message when one of them cannot be (nothing is left open then).
  GlitchPipeline(const core::Config& config, PipelineOptions options);
  ~GlitchPipeline();
  GlitchPipeline(const GlitchPipeline&) = delete;
  GlitchPipeline& operator=(const GlitchPipeline&) = delete;

  // Routes `set`'s attribution records here and gives the verdicts its families' evidence.
  // Call before set.apply(); `set` must outlive the pipeline or stop() must come first.
  void connect(probes::ProbeSet& set);
  // New detector settings (SIGHUP): the analyzer is rebuilt (learned profiles and windows
  // restart), the breaker's state is kept. Sinks keep their start-up settings.
  void reconfigure(const core::Config& config);
  // Writes what is pending to the journal, saves the breaker, stops threads. Idempotent.
  void stop();

  // One attribution record (connect() routes the set's here; a test may feed its own).
  void observe(const core::Record& record);

  void collect(core::MetricSet& out);
  // Stages by end second and wall-time bucket, for the API's heatmap (window: ui.history_s).
  std::shared_ptr<const core::StageHeatmap> stage_heatmap() const { return stage_heatmap_; }
  // The analyzer's summary with the incidents (active first, then the ended ones kept).
  core::AnalyzerSummary summary();
  uint64_t glitches();
  std::vector<core::Incident> incidents();

 private:
  void install_hints_locked();          // the verdicts' evidence from set_'s families
  probes::RouteLookup* route_lookup();  // opened on first use; nullptr when it cannot be
  std::string incident_key(const core::Incident& i) const;

  core::Config config_;
  PipelineOptions options_;
  probes::ProbeSet* set_ = nullptr;

  // A glitch for the housekeeping thread, with the Unix clock offset its stage was counted under
  // in the stage heatmap: the two agree to the nanosecond, so a heatmap cell lists its glitches.
  struct QueuedGlitch {
    core::Glitch glitch;
    int64_t unix_offset_ns;
  };

  // What one housekeeping round takes out from under mu_ for the sinks.
  struct Round {
    uint64_t now_ns = 0;
    std::vector<QueuedGlitch> glitches;
    std::vector<exporter::PropagationRow> trees;
    std::vector<std::pair<std::string, core::Incident>> incidents;  // (journal key, incident)
    int64_t unix_offset_ns = 0;
    std::optional<core::CircuitBreaker> breaker;                  // to save: its state changed
    std::optional<std::vector<exporter::BaselineRow>> baselines;  // to save: due
  };
  // Every second, and once more when stopping: ticks the detectors, then writes to the
  // journal and saves the breaker outside the lock.
  void housekeeping_loop();
  void tick_detectors_locked(uint64_t now_ns, bool last);  // `last`: the daemon is stopping
  void queue_glitches_locked(core::AnalyzerOutput& out);   // for the journal
  Round take_round_locked(uint64_t now_ns);
  void write_journal(const Round& round);  // each piece below does nothing without a journal
  void save_baselines(const Round& round);
  void restore_baselines();  // at start, from the journal
  void append_glitches(const std::vector<QueuedGlitch>& glitches);
  void write_trees(const std::vector<exporter::PropagationRow>& trees);
  void report_incidents(const Round& round);  // journals them; logs those that ended
  void prune_journal(uint64_t now_ns);
  void save_breaker(const Round& round);

  std::mutex mu_;  // guards analyzer_, queue_, tree_queue_, unix_offset_ns_
  std::unique_ptr<core::GlitchAnalyzer> analyzer_;
  std::vector<QueuedGlitch> queue_;                   // for the housekeeping thread
  std::vector<exporter::PropagationRow> tree_queue_;  // glitched requests' trees, likewise
  int64_t unix_offset_ns_ = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC, renewed every second
  std::shared_ptr<core::StageHeatmap> stage_heatmap_;
  std::unique_ptr<core::IncidentDetector> incidents_;
  // (journal key, incident) from a detector replaced by reconfigure(), for the housekeeping
  // thread.
  std::vector<std::pair<std::string, core::Incident>> incident_queue_;
  uint64_t incident_epoch_ = 0;               // detectors so far: their ids restart at 1
  std::string incident_key_prefix_;           // unique to this run, for the journal's keys
  std::atomic<uint64_t> journal_dropped_{0};  // not journaled (queue full or write error)
  std::atomic<uint64_t> journal_written_{0};
  std::string last_breaker_state_;  // as last saved

  std::unique_ptr<probes::RouteLookup> routes_;  // used under mu_, by the hint source
  bool routes_failed_ = false;
  std::unique_ptr<exporter::Journal> journal_;
  std::unique_ptr<exporter::OtlpExporter> otlp_;
  std::unique_ptr<exporter::BreakerSocket> socket_;
  std::thread housekeeping_thread_;
  uint64_t last_prune_ns_ = 0;  // the housekeeping thread's
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t baselines_saved_ns_ = 0;  // monotonic: when the incident baselines were last taken
  bool stopped_ = false;
};

}  // namespace tailcause::daemon
