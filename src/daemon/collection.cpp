// SPDX-License-Identifier: Apache-2.0
#include "daemon/collection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace tailcause::daemon {
namespace {

// A one-shot report is read by a person, not stored by Prometheus: label values need no top-K
// folding, and folding would hide exactly the late-comers a diagnosis looks for (the cgroup of
// a neighbour that started mid-collection, once the node's other pairs filled the budget).
core::Config unfolded(core::Config config) {
  config.top_k = std::max<uint32_t>(config.top_k, 100000);
  return config;
}

}  // namespace

Collection::Collection(const Startup& startup, uint64_t window_ns)
    : config_(unfolded(startup.config)), set_(startup.features, startup.layout) {
  PipelineOptions options;
  options.journal = false;
  options.otlp = false;
  options.breaker_socket = false;
  options.persist_breaker = false;
  options.summary_window_ns = window_ns;
  pipeline_ = std::make_unique<GlitchPipeline>(config_, options);
  pipeline_->connect(set_);
  set_.apply(config_);
  for (const auto& s : set_.status()) {
    if (s.enabled && !s.attached) spdlog::warn("probe family {} not attached: {}", s.name, s.error);
  }
}

Collection::~Collection() {
  if (finished_) return;
  pipeline_->stop();
  set_.stop_all();
}

void Collection::begin() {
  before_ = core::MetricSet{};
  set_.collect(before_);
  pipeline_->collect(before_);
  start_ = Clock::now();
}

double Collection::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

namespace {

// Adds to `into` the samples of `from` it lacks (same family, same labels).
void keep_vanished(const core::MetricSet& from, core::MetricSet& into) {
  for (const auto& f : from.families()) {
    for (const auto& sample : f.samples) {
      const core::Sample* now = into.find(f.name, sample.labels);
      if (now && now->labels.size() == sample.labels.size()) continue;
      into.family(f.name, f.type, f.help, f.unit).samples.push_back(sample);
    }
  }
}

}  // namespace

void Collection::checkpoint() {
  core::MetricSet now;
  set_.collect(now);
  pipeline_->collect(now);
  // Cumulative: a series that vanished before this checkpoint (a workload that already removed
  // its cgroups) keeps the last value an earlier one saw.
  keep_vanished(latest_, now);
  latest_ = std::move(now);
}

core::Diagnosis Collection::finish(double duration_seconds) {
  const double elapsed = elapsed_seconds();
  core::MetricSet after;
  set_.collect(after);
  pipeline_->collect(after);
  keep_vanished(latest_, after);
  const core::AnalyzerSummary summary = pipeline_->summary();
  finished_ = true;
  pipeline_->stop();
  set_.stop_all();

  core::DiagnosisOptions options;
  options.request_slo_ns = static_cast<uint64_t>(config_.glitch.request_slo_ms) * 1'000'000;
  options.stage_slo_ns = static_cast<uint64_t>(config_.glitch.stage_slo_ms) * 1'000'000;
  return core::build_diagnosis(summary, before_, after,
                               duration_seconds > 0 ? duration_seconds : elapsed, options);
}

}  // namespace tailcause::daemon
