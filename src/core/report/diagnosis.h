// SPDX-License-Identifier: Apache-2.0
// `tailcause diagnose`: a one-shot report from what the glitch analyzer saw during the
// collection and from the probe families' metrics at its start and its end (their deltas give
// throttled cgroups, noisy neighbours and the slowest TCP peers). Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/detect/glitch_analyzer.h"
#include "core/record/metrics.h"

namespace tailcause::core {

struct DiagnosisOptions {
  size_t max_glitches = 10;  // rows of the top-glitches table
  size_t max_rows = 10;      // rows of the cgroup and TCP tables
  // For the sentence that says nothing glitched.
  uint64_t request_slo_ns = 800'000'000;
  uint64_t stage_slo_ns = 200'000'000;
};

struct TenantReport {
  std::string tenant;
  uint64_t requests = 0, errors = 0;
  uint64_t glitches = 0;  // stage, cache and entropy glitches (slow requests are not counted)
  double qps = 0;
  uint64_t cache_lookups = 0;
  double cache_breakdown_rate = 0;  // (misses + stales) / lookups
  std::optional<uint64_t> embedding_p99_ns;
};

struct StageReport {
  StageSummary summary;
  std::optional<Component> leading;  // the component with the most time, if any
  double leading_share = 0;          // of the stage's measured time
};

// How often a (tenant, stage) glitched for one cause during the collection.
struct CauseCount {
  std::string tenant, stage, cause;
  uint64_t count = 0;
};

// Why a tenant glitched: its most frequent (stage, cause), with the slowest glitch that shows it.
struct TenantVerdict {
  std::string tenant, stage, cause;
  uint64_t count = 0;            // glitches of this stage and cause
  uint64_t tenant_glitches = 0;  // all of the tenant's glitches but slow requests
  std::optional<Glitch> example;
};

struct ThrottledCgroup {
  std::string cgroup;
  double throttled_seconds = 0;
  uint64_t throttled_periods = 0, periods = 0;
  std::optional<double> quota_cpus;  // CPUs per period; absent when unlimited or unknown
};

struct NoisyNeighbour {
  std::string cgroup, by_cgroup;  // by_cgroup's tasks took the CPU from cgroup's
  double preempted_seconds = 0;
  uint64_t preemptions = 0;
};

struct TcpPeer {
  std::string local, remote;
  uint64_t connections = 0;  // closed during the collection
  std::optional<double> mean_connection_seconds;
  uint64_t rtt_samples = 0;
  std::optional<double> mean_rtt_seconds;
};

struct Diagnosis {
  double duration_seconds = 0;
  uint64_t glitches = 0, breaker_trips = 0, requests = 0;
  std::vector<TenantReport> tenants;         // by name
  std::vector<StageReport> stages;           // by tenant, then stage
  std::vector<CauseCount> causes;            // most first
  std::vector<TenantVerdict> verdicts;       // tenants that glitched, most glitches first
  std::vector<Glitch> top_glitches;          // stage glitches slowest first, then slow requests
  std::vector<CacheBreakdownStatus> caches;  // every (tenant, cache) seen
  std::vector<CacheLoopSummary> cache_loop;  // what cache libraries did (warm-ups, rebalances)
  std::vector<ThrottledCgroup> throttled;    // most throttled time first
  std::vector<NoisyNeighbour> neighbours;    // most preempted time first
  std::vector<TcpPeer> peers;                // slowest first
  std::vector<Incident> incidents;           // sustained slowdowns: active, then newest ended
  DiagnosisOptions options;
};

// `before` and `after` are scrapes of the probe families (and of the glitch pipeline: its
// tailcause_glitches series give the cause counts; without them the top glitches do) taken at
// the start and at the end of a collection lasting `duration_seconds`.
Diagnosis build_diagnosis(const AnalyzerSummary& summary, const MetricSet& before,
                          const MetricSet& after, double duration_seconds,
                          const DiagnosisOptions& options = {});

// One plain sentence: which tenant and stage glitched most and why, or "no glitches: ...";
// then the sustained slowdowns (incidents), if any.
std::string diagnosis_headline(const Diagnosis& d);

// Tables for a terminal; empty sections say "none seen".
std::string render_diagnosis_text(const Diagnosis& d);

nlohmann::json diagnosis_json(const Diagnosis& d);
nlohmann::json glitch_json(const Glitch& g);
nlohmann::json incident_json(const Incident& i);
// "tenant ta: retrieval 4.8x its 3.1 ms baseline (peak 12x), ... for 42 s (ongoing)"
std::string incident_sentence(const Incident& i);

}  // namespace tailcause::core
