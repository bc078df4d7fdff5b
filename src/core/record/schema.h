// SPDX-License-Identifier: Apache-2.0
// The names tailcause shows the world, each spelled once: the components a stage's wall time
// splits into, and every metric family the daemon exports. The journal's columns, the OTLP
// attributes, the `glitches` listing, the reports and the probe families derive from here, so a
// rename here renames everywhere (tests/unit/core/detect/test_schema.cpp checks the derived lists).
// Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/record/metrics.h"

namespace tailcause::core {

// ---- components ----------------------------------------------------------------------------
// Where a stage's wall time went; they add up to the wall time. The order is the kernel's
// (bpf/attrib.h enum attrib_component, checked in stage_record.cpp) with unattributed, which
// user space computes, last.
#define TAILCAUSE_COMPONENTS(X) \
  X(on_cpu)                     \
  X(runqueue)                   \
  X(cpu_throttled)              \
  X(block_io)                   \
  X(network)                    \
  X(lock)                       \
  X(gpu)                        \
  X(sleep)                      \
  X(unattributed)

#define TAILCAUSE_COMPONENT_ENUM(name) name,
enum class Component : uint8_t { TAILCAUSE_COMPONENTS(TAILCAUSE_COMPONENT_ENUM) };
#undef TAILCAUSE_COMPONENT_ENUM

#define TAILCAUSE_COMPONENT_NAME(name) #name,
inline constexpr std::array kComponentNames = {TAILCAUSE_COMPONENTS(TAILCAUSE_COMPONENT_NAME)};
#undef TAILCAUSE_COMPONENT_NAME
inline constexpr size_t kComponents = kComponentNames.size();

// Every component in order, for range-for loops.
inline constexpr std::array<Component, kComponents> kAllComponents = [] {
  std::array<Component, kComponents> out{};
  for (size_t i = 0; i < kComponents; ++i) out[i] = static_cast<Component>(i);
  return out;
}();

constexpr size_t index_of(Component c) { return static_cast<size_t>(c); }
constexpr const char* component_name(Component c) { return kComponentNames[index_of(c)]; }
// The component a name spells; nullopt for any other text.
constexpr std::optional<Component> component_from_name(std::string_view name) {
  for (size_t i = 0; i < kComponents; ++i)
    if (name == kComponentNames[i]) return static_cast<Component>(i);
  return std::nullopt;
}

// ---- metric families -----------------------------------------------------------------------
// Names without the `_total` that renderers add to counters. The family that emits each is in
// kMetrics below.
namespace metric {
// sched family
inline constexpr const char kRunqueueLatencySeconds[] = "tailcause_runqueue_latency_seconds";
inline constexpr const char kOffcpuSeconds[] = "tailcause_offcpu_seconds";
inline constexpr const char kCgroupPreemptions[] = "tailcause_cgroup_preemptions";
inline constexpr const char kCgroupPreemptedSeconds[] = "tailcause_cgroup_preempted_seconds";
inline constexpr const char kRunqueueLength[] = "tailcause_runqueue_length";
// throttle family
inline constexpr const char kCpuThrottledSeconds[] = "tailcause_cpu_throttled_seconds";
inline constexpr const char kCpuThrottledPeriods[] = "tailcause_cpu_throttled_periods";
inline constexpr const char kCpuPeriods[] = "tailcause_cpu_periods";
inline constexpr const char kCpuQuotaSeconds[] = "tailcause_cpu_quota_seconds";
inline constexpr const char kCpuPeriodSeconds[] = "tailcause_cpu_period_seconds";
inline constexpr const char kCpuWeight[] = "tailcause_cpu_weight";
// tcp family
inline constexpr const char kTcpConnectionDurationSeconds[] =
    "tailcause_tcp_connection_duration_seconds";
inline constexpr const char kTcpRttSeconds[] = "tailcause_tcp_rtt_seconds";
inline constexpr const char kTcpSentBytes[] = "tailcause_tcp_sent_bytes";
inline constexpr const char kTcpReceivedBytes[] = "tailcause_tcp_received_bytes";
inline constexpr const char kTcpRetransmits[] = "tailcause_tcp_retransmits";
// ... and its qdisc poller (probes/qdisc_stats.h): per device and qdisc, from rtnetlink
inline constexpr const char kQdiscOverlimits[] = "tailcause_qdisc_overlimits";
inline constexpr const char kQdiscDrops[] = "tailcause_qdisc_drops";
inline constexpr const char kQdiscSentBytes[] = "tailcause_qdisc_sent_bytes";
// memory family
inline constexpr const char kPageCacheMisses[] = "tailcause_page_cache_misses";
inline constexpr const char kMajorFaults[] = "tailcause_major_faults";
inline constexpr const char kProcessPageCacheMisses[] = "tailcause_process_page_cache_misses";
inline constexpr const char kMemcgReclaimSeconds[] = "tailcause_memcg_reclaim_seconds";
inline constexpr const char kMemcgReclaimedBytes[] = "tailcause_memcg_reclaimed_bytes";
inline constexpr const char kMemcgPressureStallSeconds[] = "tailcause_memcg_pressure_stall_seconds";
inline constexpr const char kMemoryPressureStallSeconds[] =
    "tailcause_memory_pressure_stall_seconds";
inline constexpr const char kProcessMajorFaults[] = "tailcause_process_major_faults";
// block family
inline constexpr const char kBlockIoLatencySeconds[] = "tailcause_block_io_latency_seconds";
inline constexpr const char kBlockIoBytes[] = "tailcause_block_io_bytes";
// attrib family: stages and requests (core/stage_aggregator), the probe's own counters
inline constexpr const char kStageDurationSeconds[] = "tailcause_stage_duration_seconds";
inline constexpr const char kStageTimeSeconds[] = "tailcause_stage_time_seconds";  // by component
// Helper threads' own time in a stage (context_attach worker spans), by component: parallel
// to the stage's wall time, so never part of kStageTimeSeconds.
inline constexpr const char kStageHelperSeconds[] = "tailcause_stage_helper_seconds";
inline constexpr const char kStagePageCacheMisses[] = "tailcause_stage_page_cache_misses";
inline constexpr const char kStageMajorFaults[] = "tailcause_stage_major_faults";
inline constexpr const char kStageReadBytes[] = "tailcause_stage_read_bytes";
inline constexpr const char kRequestDurationSeconds[] = "tailcause_request_duration_seconds";
inline constexpr const char kRequests[] = "tailcause_requests";
inline constexpr const char kTimeToFirstTokenSeconds[] = "tailcause_time_to_first_token_seconds";
inline constexpr const char kTimePerOutputTokenSeconds[] =
    "tailcause_time_per_output_token_seconds";
inline constexpr const char kOutputEntropy[] = "tailcause_output_entropy";
inline constexpr const char kCacheLookups[] = "tailcause_cache_lookups";
inline constexpr const char kCacheHitAgeSeconds[] = "tailcause_cache_hit_age_seconds";
inline constexpr const char kCacheActions[] = "tailcause_cache_actions";
inline constexpr const char kCacheActionEntries[] = "tailcause_cache_action_entries";
inline constexpr const char kCacheQuotaBytes[] = "tailcause_cache_quota_bytes";
inline constexpr const char kLayerDurationSeconds[] = "tailcause_layer_duration_seconds";
inline constexpr const char kSdkErrors[] = "tailcause_sdk_errors";
inline constexpr const char kAttribMissedSwitches[] = "tailcause_attrib_missed_switches";
inline constexpr const char kAttribSpansInProgress[] = "tailcause_attrib_spans_in_progress";
inline constexpr const char kRecipeCalls[] = "tailcause_recipe_calls";
inline constexpr const char kRecipeSpans[] = "tailcause_recipe_spans";
inline constexpr const char kRecipeStatus[] = "tailcause_recipe_status";
inline constexpr const char kRecipeAttachedFiles[] = "tailcause_recipe_attached_files";
inline constexpr const char kUsdtAttachedBinaries[] = "tailcause_usdt_attached_binaries";
inline constexpr const char kUsdtBinaryChanges[] = "tailcause_usdt_binary_changes";
// glitch pipeline (core/glitch_analyzer, the journal, OTLP, the breaker socket)
inline constexpr const char kGlitches[] = "tailcause_glitches";
inline constexpr const char kCircuitBreakerOpen[] = "tailcause_circuit_breaker_open";
inline constexpr const char kCircuitBreakerTrips[] = "tailcause_circuit_breaker_trips";
inline constexpr const char kCacheBreakdownRatio[] = "tailcause_cache_breakdown_ratio";
inline constexpr const char kCacheBreakdowns[] = "tailcause_cache_breakdowns";
inline constexpr const char kCacheCompetition[] = "tailcause_cache_competition";
inline constexpr const char kCacheStaleAgeSeconds[] = "tailcause_cache_stale_age_seconds";
inline constexpr const char kGlitchRequestsDropped[] = "tailcause_glitch_requests_dropped";
inline constexpr const char kIncidents[] = "tailcause_incidents";
inline constexpr const char kIncidentsActive[] = "tailcause_incidents_active";
inline constexpr const char kJournalGlitchesWritten[] = "tailcause_journal_glitches_written";
inline constexpr const char kJournalGlitchesDropped[] = "tailcause_journal_glitches_dropped";
inline constexpr const char kOtlpSpansExported[] = "tailcause_otlp_spans_exported";
inline constexpr const char kOtlpSpansDropped[] = "tailcause_otlp_spans_dropped";
inline constexpr const char kOtlpSpansUnsampled[] = "tailcause_otlp_spans_unsampled";
inline constexpr const char kOtlpExportErrors[] = "tailcause_otlp_export_errors";
inline constexpr const char kOtlpQueueSpans[] = "tailcause_otlp_queue_spans";
inline constexpr const char kOtlpExportSeconds[] = "tailcause_otlp_export_seconds";
inline constexpr const char kBreakerSocketRequests[] = "tailcause_breaker_socket_requests";
inline constexpr const char kBreakerSocketErrors[] = "tailcause_breaker_socket_errors";
inline constexpr const char kBreakerSocketClientsRefused[] =
    "tailcause_breaker_socket_clients_refused";
inline constexpr const char kBreakerSocketClientsClosed[] =
    "tailcause_breaker_socket_clients_closed";
inline constexpr const char kBreakerSocketClients[] = "tailcause_breaker_socket_clients";
// the daemon itself (probe set, BPF loaders)
inline constexpr const char kProbeAttached[] = "tailcause_probe_attached";
inline constexpr const char kEventsLost[] = "tailcause_events_lost";
inline constexpr const char kBpfProgramRunSeconds[] = "tailcause_bpf_program_run_seconds";
inline constexpr const char kBpfProgramRuns[] = "tailcause_bpf_program_runs";
inline constexpr const char kLabelValuesFolded[] = "tailcause_label_values_folded";
inline constexpr const char kSeries[] = "tailcause_series";
inline constexpr const char kSeriesLimit[] = "tailcause_series_limit";
inline constexpr const char kSeriesFolded[] = "tailcause_series_folded";
inline constexpr const char kBuildInfo[] = "tailcause_build_info";
// the HTTP endpoint
inline constexpr const char kHttpConnections[] = "tailcause_http_connections";
inline constexpr const char kHttpConnectionsClosed[] = "tailcause_http_connections_closed";
inline constexpr const char kHttpApiBusy[] = "tailcause_http_api_busy";
}  // namespace metric

// One exported family: its name, its type and who emits it (a probe family's name, or
// "glitch" for the glitch pipeline, "daemon" for the probe set and loaders).
struct MetricSpec {
  const char* name;
  MetricType type;
  const char* source;
};

inline constexpr MetricSpec kMetrics[] = {
    {metric::kRunqueueLatencySeconds, MetricType::Histogram, "sched"},
    {metric::kOffcpuSeconds, MetricType::Counter, "sched"},
    {metric::kCgroupPreemptions, MetricType::Counter, "sched"},
    {metric::kCgroupPreemptedSeconds, MetricType::Counter, "sched"},
    {metric::kRunqueueLength, MetricType::Histogram, "sched"},
    {metric::kCpuThrottledSeconds, MetricType::Counter, "throttle"},
    {metric::kCpuThrottledPeriods, MetricType::Counter, "throttle"},
    {metric::kCpuPeriods, MetricType::Counter, "throttle"},
    {metric::kCpuQuotaSeconds, MetricType::Gauge, "throttle"},
    {metric::kCpuPeriodSeconds, MetricType::Gauge, "throttle"},
    {metric::kCpuWeight, MetricType::Gauge, "throttle"},
    {metric::kTcpConnectionDurationSeconds, MetricType::Histogram, "tcp"},
    {metric::kTcpRttSeconds, MetricType::Histogram, "tcp"},
    {metric::kTcpSentBytes, MetricType::Counter, "tcp"},
    {metric::kTcpReceivedBytes, MetricType::Counter, "tcp"},
    {metric::kTcpRetransmits, MetricType::Counter, "tcp"},
    {metric::kQdiscOverlimits, MetricType::Counter, "tcp"},
    {metric::kQdiscDrops, MetricType::Counter, "tcp"},
    {metric::kQdiscSentBytes, MetricType::Counter, "tcp"},
    {metric::kPageCacheMisses, MetricType::Counter, "memory"},
    {metric::kMajorFaults, MetricType::Counter, "memory"},
    {metric::kProcessPageCacheMisses, MetricType::Counter, "memory"},
    {metric::kMemcgReclaimSeconds, MetricType::Counter, "memory"},
    {metric::kMemcgReclaimedBytes, MetricType::Counter, "memory"},
    {metric::kMemcgPressureStallSeconds, MetricType::Counter, "memory"},
    {metric::kMemoryPressureStallSeconds, MetricType::Counter, "memory"},
    {metric::kProcessMajorFaults, MetricType::Counter, "memory"},
    {metric::kBlockIoLatencySeconds, MetricType::Histogram, "block"},
    {metric::kBlockIoBytes, MetricType::Counter, "block"},
    {metric::kStageDurationSeconds, MetricType::Histogram, "attrib"},
    {metric::kStageTimeSeconds, MetricType::Counter, "attrib"},
    {metric::kStageHelperSeconds, MetricType::Counter, "attrib"},
    {metric::kStagePageCacheMisses, MetricType::Counter, "attrib"},
    {metric::kStageMajorFaults, MetricType::Counter, "attrib"},
    {metric::kStageReadBytes, MetricType::Counter, "attrib"},
    {metric::kRequestDurationSeconds, MetricType::Histogram, "attrib"},
    {metric::kRequests, MetricType::Counter, "attrib"},
    {metric::kTimeToFirstTokenSeconds, MetricType::Histogram, "attrib"},
    {metric::kTimePerOutputTokenSeconds, MetricType::Histogram, "attrib"},
    {metric::kOutputEntropy, MetricType::Histogram, "attrib"},
    {metric::kCacheLookups, MetricType::Counter, "attrib"},
    {metric::kCacheHitAgeSeconds, MetricType::Histogram, "attrib"},
    {metric::kCacheActions, MetricType::Counter, "attrib"},
    {metric::kCacheActionEntries, MetricType::Counter, "attrib"},
    {metric::kCacheQuotaBytes, MetricType::Gauge, "attrib"},
    {metric::kLayerDurationSeconds, MetricType::Histogram, "attrib"},
    {metric::kSdkErrors, MetricType::Counter, "attrib"},
    {metric::kAttribMissedSwitches, MetricType::Counter, "attrib"},
    {metric::kAttribSpansInProgress, MetricType::Gauge, "attrib"},
    {metric::kRecipeCalls, MetricType::Counter, "attrib"},
    {metric::kRecipeSpans, MetricType::Counter, "attrib"},
    {metric::kRecipeStatus, MetricType::Gauge, "attrib"},
    {metric::kRecipeAttachedFiles, MetricType::Gauge, "attrib"},
    {metric::kUsdtAttachedBinaries, MetricType::Gauge, "attrib"},
    {metric::kUsdtBinaryChanges, MetricType::Counter, "attrib"},
    {metric::kSeries, MetricType::Gauge, "attrib"},
    {metric::kSeriesLimit, MetricType::Gauge, "attrib"},
    {metric::kSeriesFolded, MetricType::Counter, "attrib"},
    {metric::kGlitches, MetricType::Counter, "glitch"},
    {metric::kCircuitBreakerOpen, MetricType::Gauge, "glitch"},
    {metric::kCircuitBreakerTrips, MetricType::Counter, "glitch"},
    {metric::kCacheBreakdownRatio, MetricType::Gauge, "glitch"},
    {metric::kCacheBreakdowns, MetricType::Counter, "glitch"},
    {metric::kCacheCompetition, MetricType::Gauge, "glitch"},
    {metric::kCacheStaleAgeSeconds, MetricType::Gauge, "glitch"},
    {metric::kGlitchRequestsDropped, MetricType::Counter, "glitch"},
    {metric::kIncidents, MetricType::Counter, "glitch"},
    {metric::kIncidentsActive, MetricType::Gauge, "glitch"},
    {metric::kJournalGlitchesWritten, MetricType::Counter, "glitch"},
    {metric::kJournalGlitchesDropped, MetricType::Counter, "glitch"},
    {metric::kOtlpSpansExported, MetricType::Counter, "glitch"},
    {metric::kOtlpSpansDropped, MetricType::Counter, "glitch"},
    {metric::kOtlpSpansUnsampled, MetricType::Counter, "glitch"},
    {metric::kOtlpExportErrors, MetricType::Counter, "glitch"},
    {metric::kOtlpQueueSpans, MetricType::Gauge, "glitch"},
    {metric::kOtlpExportSeconds, MetricType::Histogram, "glitch"},
    {metric::kBreakerSocketRequests, MetricType::Counter, "glitch"},
    {metric::kBreakerSocketErrors, MetricType::Counter, "glitch"},
    {metric::kBreakerSocketClientsRefused, MetricType::Counter, "glitch"},
    {metric::kBreakerSocketClientsClosed, MetricType::Counter, "glitch"},
    {metric::kBreakerSocketClients, MetricType::Gauge, "glitch"},
    {metric::kProbeAttached, MetricType::Gauge, "daemon"},
    {metric::kEventsLost, MetricType::Counter, "daemon"},
    {metric::kBpfProgramRunSeconds, MetricType::Counter, "daemon"},
    {metric::kBpfProgramRuns, MetricType::Counter, "daemon"},
    {metric::kLabelValuesFolded, MetricType::Gauge, "daemon"},
    {metric::kBuildInfo, MetricType::Gauge, "daemon"},
    {metric::kHttpConnections, MetricType::Gauge, "daemon"},
    {metric::kHttpConnectionsClosed, MetricType::Counter, "daemon"},
    {metric::kHttpApiBusy, MetricType::Counter, "daemon"},
};

// The spec of a family name; nullptr when the daemon exports no such family.
constexpr const MetricSpec* find_metric(std::string_view name) {
  for (const auto& m : kMetrics)
    if (name == m.name) return &m;
  return nullptr;
}

}  // namespace tailcause::core
