// SPDX-License-Identifier: Apache-2.0
// Heap bytes per series of each structure keyed by an agent's own strings (tenant, agent,
// stage): the aggregator behind /metrics, the glitch analyzer (detector, breaker, summaries),
// the incident detector, the stage heatmap and the web UI's history, fed N distinct series for
// a minute of records, one every 10 ms per series. Prints a table; no assertion (the limits:
// section's defaults and docs/configuration.md are sized from it).
//   series_memory [N...]   (default 16 128)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/aggregate/metric_history.h"
#include "core/aggregate/stage_aggregator.h"
#include "core/aggregate/stage_heatmap.h"
#include "core/config/config.h"
#include "core/detect/glitch_analyzer.h"
#include "core/detect/incident_detector.h"
#include "core/record/schema.h"

namespace core = tailcause::core;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr int kSeconds = 60;
constexpr int kPerSecond = 100;

size_t heap_bytes() {
  malloc_trim(0);
  return mallinfo2().uordblks;
}

// Series i's stage ending at t: durations spread over a few buckets, like a real stage's.
core::StageRecord stage(size_t i, uint64_t end_ns, uint64_t n) {
  core::StageRecord r;
  r.id.request_id = n + 1;
  r.id.pid = 4242;
  r.id.tenant = "tenant-" + std::to_string(i % 16);
  r.id.agent = "agent";
  r.id.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  r.stage = "step-" + std::to_string(i);
  r.kind = core::stage_kind_value(core::StageKind::other);
  const uint64_t wall = (2 + n % 7) * kMs;
  r.start_ns = end_ns - wall;
  r.end_ns = end_ns;
  r.component_ns[static_cast<size_t>(core::Component::on_cpu)] = wall / 2;
  r.component_ns[static_cast<size_t>(core::Component::runqueue)] = wall - wall / 2;
  return r;
}

// Feeds `series` series for a minute through `observe(record)`, calling `each_second(t)` once
// per second; returns the heap it kept, per series.
double per_series(size_t series, const std::function<void(const core::StageRecord&)>& observe,
                  const std::function<void(uint64_t)>& each_second) {
  const size_t before = heap_bytes();
  uint64_t n = 0;
  for (int s = 0; s < kSeconds; ++s) {
    for (int k = 0; k < kPerSecond; ++k) {
      const uint64_t t = (100ull + s) * 1000 * kMs + k * 10 * kMs;
      for (size_t i = 0; i < series; ++i) observe(stage(i, t, n++));
    }
    each_second((101ull + s) * 1000 * kMs);
  }
  return static_cast<double>(heap_bytes() - before) / static_cast<double>(series);
}

void measure(size_t series) {
  core::Config config;
  config.top_k = 100000;
  config.limits.stage_series = 100000;
  std::printf("%zu series, a minute at %d stages/s each:\n", series, kPerSecond);
  {
    core::StageAggregator agg(config.top_k);
    std::printf("  aggregator (/metrics)        %8.0f bytes/series\n",
                per_series(
                    series, [&](const auto& r) { agg.add(r); }, [](uint64_t) {}));
  }
  {
    core::GlitchAnalyzer analyzer(core::AnalyzerSettings::from(config));
    core::AnalyzerOutput out;
    std::printf("  glitch analyzer              %8.0f bytes/series\n",
                per_series(
                    series, [&](const auto& r) { analyzer.observe(core::Record{r}, out); },
                    [&](uint64_t t) {
                      analyzer.tick(t);
                      out = {};
                    }));
  }
  {
    core::IncidentDetector incidents(core::incident_config(config));
    std::printf("  incident detector            %8.0f bytes/series\n",
                per_series(
                    series, [&](const auto& r) { incidents.observe(r); },
                    [&](uint64_t t) {
                      incidents.tick(t);
                      incidents.drain_changed();
                    }));
  }
  {
    core::StageHeatmap heatmap(core::StageHeatmapLimits{.max_keys = 100000});
    std::printf("  stage heatmap (a minute)     %8.0f bytes/series\n",
                per_series(
                    series,
                    [&](const auto& r) {
                      heatmap.add(r.id.tenant, r.stage,
                                  static_cast<int64_t>(r.end_ns) + 1'700'000'000'000'000'000,
                                  r.wall_ns());
                    },
                    [](uint64_t) {}));
  }
  {
    // The UI history samples every 2 s: 30 ticks a minute; its ring holds 450 (15 minutes).
    core::StageAggregator agg(config.top_k);
    core::HistorySettings hs;
    hs.families = {core::metric::kStageDurationSeconds, core::metric::kStageTimeSeconds};
    core::MetricHistory history(hs);
    int second = 0;
    auto feed = [&]() {
      return per_series(
          series, [&](const auto& r) { agg.add(r); },
          [&](uint64_t t) {
            if (++second % 2) return;
            core::MetricSet m;
            agg.collect(m);
            history.add(m, static_cast<int64_t>(t) + second * 1'000'000'000ll);
          });
    };
    const double first = feed();
    const double per_tick = feed() / 30;
    std::printf(
        "  UI history                   %8.0f bytes/series and %.0f a tick (450 ticks: %.0f)\n",
        first - 30 * per_tick, per_tick, first - 30 * per_tick + 450 * per_tick);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {16, 128};
  for (size_t n : sizes) measure(n);
  return 0;
}
