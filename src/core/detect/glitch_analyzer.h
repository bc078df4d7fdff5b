// SPDX-License-Identifier: Apache-2.0
// The detectors stage of the data flow: attribution records in, glitches with verdicts and
// finished request traces out. It runs every detector the issue names — stage and request
// glitches (SLO or recent P99), the circuit breaker per tenant and agent, vector-cache
// breakdown, output-entropy spikes — asks the rest of the daemon for evidence only when a stage
// glitched, groups stages under their request for trace export, and keeps the glitch series
// and a summary for `tailcause diagnose`. Single-threaded (the caller locks); pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/detect/cache_breakdown.h"
#include "core/detect/cache_loop_report.h"
#include "core/detect/circuit_breaker.h"
#include "core/config/config.h"
#include "core/detect/entropy_spike.h"
#include "core/detect/glitch_detector.h"
#include "core/detect/incident_detector.h"
#include "core/aggregate/label_budget.h"
#include "core/record/metrics.h"
#include "core/detect/request_trace.h"
#include "core/record/stage_record.h"
#include "core/aggregate/streaming_quantile.h"

namespace tailcause::core {

struct AnalyzerSettings {
  GlitchConfig glitch;
  BreakerConfig breaker;
  CacheBreakdownSettings cache;
  EntropySettings entropy;
  size_t top_k = 50;                  // label values per label in the glitch series
  bool collect_traces = false;        // keep stages until their request ends (trace export)
  bool glitched_traces_only = false;  // ... and hand out only the traces of glitched requests
  size_t max_pending_requests = 10000;
  size_t max_stages_per_request = 256;
  uint64_t pending_timeout_ns = 300'000'000'000;  // a request not ended by then is dropped
  uint64_t summary_window_ns = 60'000'000'000;    // stage P50/P99 in summary()
  // A run-queue or throttling verdict waits this long after its stage ended for the evidence
  // that covers it (who preempted it is read once a second): explained at once, a fault's
  // first verdicts would cite the second before it. 0: at once (release_parked not needed).
  uint64_t evidence_delay_ns = 0;
  size_t max_parked = 4096;  // verdicts waiting so; beyond, explained at once

  static AnalyzerSettings from(const Config& config);
};

// Evidence from the other probe families for a glitching stage (throttling of its cgroup,
// who preempted it, its network peer). Called only for glitches.
using HintSource = std::function<EvidenceHints(const StageRecord&)>;

// What one record (or a tick) produced.
struct AnalyzerOutput {
  std::vector<Glitch> glitches;
  std::vector<RequestTrace> traces;  // only with collect_traces
  // Requests grouped from recipe calls, as the stages they were judged as (for the incidents).
  std::vector<StageRecord> recipe_requests;
};

// For `tailcause diagnose`: what the analyzer saw since it started.
struct StageSummary {
  std::string tenant, stage;
  uint64_t count = 0;
  uint64_t p50_ns = 0, p99_ns = 0;  // over the last summary_window_ns
  uint64_t glitches = 0;
  std::array<uint64_t, kComponents> component_ns{};
};
struct TenantSummary {
  std::string tenant;
  uint64_t requests = 0, errors = 0, glitches = 0;
  uint64_t cache_lookups = 0, cache_misses = 0, cache_stales = 0;
  double cache_breakdown_rate() const;  // (misses + stales) / lookups; 0 without lookups
};
struct AnalyzerSummary {
  std::vector<TenantSummary> tenants;  // by name
  std::vector<StageSummary> stages;    // by tenant, then stage
  std::vector<CacheBreakdownStatus> caches;
  std::vector<CacheLoopSummary> cache_loop;  // warm-ups and rebalances, hit rate around them
  // Slowest first: the kTopPerCause slowest of each (tenant, stage, cause), so a tenant whose
  // glitches are all fast ones (cache breakdowns, entropy spikes) still has its examples.
  std::vector<Glitch> top_glitches;
  uint64_t glitches = 0;
  uint64_t breaker_trips = 0;
  // Sustained slowdowns (filled by the daemon's glitch pipeline, which runs their detector).
  std::vector<Incident> incidents;
};

class GlitchAnalyzer {
 public:
  static constexpr size_t kTopPerCause = 3;

  explicit GlitchAnalyzer(AnalyzerSettings settings);

  void set_hint_source(HintSource source) { hints_ = std::move(source); }
  // CLOCK_REALTIME minus CLOCK_MONOTONIC, for the traces' Unix times.
  void set_unix_offset_ns(int64_t offset) { unix_offset_ns_ = offset; }

  void observe(const Record& record, AnalyzerOutput& out);
  // Drops requests pending longer than pending_timeout_ns (their stages are lost to traces).
  void tick(uint64_t now_ns);
  // Explains again, with the evidence now at hand, and hands out the verdicts whose delay
  // (evidence_delay_ns) has passed by now_ns; all of them when `all`.
  void release_parked(uint64_t now_ns, AnalyzerOutput& out, bool all = false);

  void collect(MetricSet& out, uint64_t now_ns) const;
  AnalyzerSummary summary(uint64_t now_ns) const;

  const CacheBreakdownDetector& caches() const { return caches_; }
  CircuitBreaker& breaker() { return breaker_; }
  const CircuitBreaker& breaker() const { return breaker_; }
  uint64_t glitch_count() const { return glitches_total_; }
  // A reload builds a new analyzer; its counters continue the old one's so that
  // tailcause_glitches_total never goes backwards (Prometheus would read a reset).
  void continue_counters_of(GlitchAnalyzer& previous);
  size_t pending_requests() const { return pending_.size(); }
  uint64_t dropped_requests() const { return dropped_requests_; }

 private:
  struct Pending {
    uint64_t first_seen_ns = 0;
    std::vector<StageRecord> stages;
    std::vector<Glitch> glitches;
  };
  struct StageStats {
    explicit StageStats(uint64_t window_ns) : window(window_ns / 6 ? window_ns / 6 : 1, 6) {}
    StreamingQuantile window;
    uint64_t count = 0, glitches = 0;
    std::array<uint64_t, kComponents> component_ns{};
  };
  using PendingKey = std::pair<uint32_t, uint64_t>;  // pid, request id

  void on_stage(const StageRecord& r, AnalyzerOutput& out);
  void on_request(const RequestRecord& r, AnalyzerOutput& out);
  void on_cache(const CacheRecord& r, AnalyzerOutput& out);
  void on_quality(const QualityRecord& r, AnalyzerOutput& out);
  void on_process_exit(uint32_t pid);
  void emit(Glitch g, AnalyzerOutput& out);
  // Emits now, or parks a verdict whose evidence may not be posted yet (evidence_delay_ns).
  void emit_or_park(Glitch g, const StageRecord& r, AnalyzerOutput& out);
  struct Parked {
    Glitch glitch;
    StageRecord stage;  // what was judged, to explain it again
    uint64_t due_ns = 0;
  };
  std::deque<Parked> parked_;
  Pending* pending_for(uint32_t pid, uint64_t request_id, uint64_t now_ns);
  TenantSummary& tenant(const std::string& name);

  AnalyzerSettings settings_;
  GlitchDetector detector_;
  CircuitBreaker breaker_;
  CacheBreakdownDetector caches_;
  CacheLoopTracker cache_loop_;
  EntropySpikeDetector entropy_;
  HintSource hints_;
  int64_t unix_offset_ns_ = 0;

  std::map<PendingKey, Pending> pending_;
  uint64_t dropped_requests_ = 0;

  // Summary and series, bounded by the detector's own bound on (tenant, stage) pairs.
  std::map<std::string, TenantSummary> tenants_;
  std::map<std::pair<std::string, std::string>, StageStats> stages_;
  using GlitchKey = std::tuple<std::string, std::string, std::string>;  // tenant, stage, cause
  std::map<GlitchKey, std::vector<Glitch>> top_;  // kTopPerCause slowest, by unfolded labels
  using CountKey = std::tuple<std::string, std::string, std::string, std::string>;
  LabelBudget glitch_tenants_, glitch_agents_, glitch_stages_;
  std::map<CountKey, uint64_t> glitch_counts_;  // tenant, agent, stage, cause (folded)
  uint64_t glitches_total_ = 0;
};

}  // namespace tailcause::core
