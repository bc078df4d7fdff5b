// SPDX-License-Identifier: Apache-2.0
#include "core/detect/glitch_analyzer.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "core/detect/recipe_request_stage.h"
#include "core/record/schema.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kMs = 1'000'000;

bool slower(const Glitch& a, const Glitch& b) { return a.check.wall_ns > b.check.wall_ns; }

}  // namespace

AnalyzerSettings AnalyzerSettings::from(const Config& config) {
  AnalyzerSettings s;
  s.glitch.request_slo_ns = config.glitch.request_slo_ms * kMs;
  s.glitch.stage_slo_ns = config.glitch.stage_slo_ms * kMs;
  for (const auto& [stage, ms] : config.glitch.stage_slos_ms) {
    s.glitch.stage_slo_ns_by_stage[stage] = ms * kMs;
  }
  s.glitch.p99_factor = config.glitch.p99_factor;
  s.glitch.min_samples = config.glitch.min_samples;
  s.glitch.recipe_noise_floor_ns = config.glitch.recipe_noise_floor_ms * kMs;
  s.breaker.slow_ns = config.breaker.slow_ms * kMs;
  s.breaker.trip_after = config.breaker.trip_after;
  s.breaker.quiet_ns = static_cast<uint64_t>(config.breaker.quiet_s) * 1000 * kMs;
  s.cache = config.cache_breakdown;
  s.entropy = config.entropy;
  s.top_k = config.top_k;
  s.glitch.max_series = config.limits.stage_series;
  s.collect_traces = !config.otlp.endpoint.empty();
  return s;
}

double TenantSummary::cache_breakdown_rate() const {
  return cache_lookups
             ? static_cast<double>(cache_misses + cache_stales) / static_cast<double>(cache_lookups)
             : 0.0;
}

GlitchAnalyzer::GlitchAnalyzer(AnalyzerSettings settings)
    : settings_(std::move(settings)),
      detector_(settings_.glitch),
      breaker_(settings_.breaker),
      caches_(settings_.cache),
      entropy_(settings_.entropy),
      glitch_tenants_(settings_.top_k),
      glitch_agents_(settings_.top_k),
      glitch_stages_(settings_.top_k) {}

void GlitchAnalyzer::observe(const Record& record, AnalyzerOutput& out) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, StageRecord>) on_stage(r, out);
        if constexpr (std::is_same_v<T, RequestRecord>) on_request(r, out);
        if constexpr (std::is_same_v<T, CacheRecord>) on_cache(r, out);
        if constexpr (std::is_same_v<T, CacheActionRecord>) cache_loop_.observe(r);
        if constexpr (std::is_same_v<T, QualityRecord>) on_quality(r, out);
        if constexpr (std::is_same_v<T, ProcessRecord>) {
          if (!r.exec) on_process_exit(r.pid);
        }
      },
      record);
}

GlitchAnalyzer::Pending* GlitchAnalyzer::pending_for(uint32_t pid, uint64_t request_id,
                                                     uint64_t now_ns) {
  if (request_id == 0) return nullptr;
  auto it = pending_.find({pid, request_id});
  if (it != pending_.end()) return &it->second;
  if (pending_.size() >= settings_.max_pending_requests) {
    dropped_requests_++;
    return nullptr;
  }
  Pending& p = pending_[{pid, request_id}];
  p.first_seen_ns = now_ns;
  return &p;
}

TenantSummary& GlitchAnalyzer::tenant(const std::string& name) {
  auto it = tenants_.find(name);
  if (it != tenants_.end()) return it->second;
  // Bounded like the detector's series: beyond, everything counts under "__other__".
  const std::string& key = tenants_.size() < settings_.glitch.max_series ? name : kOtherLabel;
  TenantSummary& t = tenants_[key];
  t.tenant = key;
  return t;
}

void GlitchAnalyzer::on_stage(const StageRecord& r, AnalyzerOutput& out) {
  if (r.aborted()) return;  // the thread exited mid-stage: no wall time to judge
  const bool worker = r.worker() || r.kind == StageRecord::kWorkerSpanKind;
  // A request is kept pending for its trace, or (below) once one of its stages glitched.
  Pending* p = r.id.synthetic || !settings_.collect_traces
                   ? nullptr
                   : pending_for(r.id.pid, r.id.request_id, r.end_ns);
  if (p && p->stages.size() < settings_.max_stages_per_request) p->stages.push_back(r);
  // A worker span is part of its owner's stage, which is judged when it ends.
  if (worker) return;

  auto key = std::make_pair(r.id.tenant, r.stage);
  auto st = stages_.find(key);
  if (st == stages_.end() && stages_.size() < settings_.glitch.max_series) {
    st = stages_.emplace(key, StageStats(settings_.summary_window_ns)).first;
  }
  if (st != stages_.end()) {
    st->second.window.add(r.end_ns, r.wall_ns());
    st->second.count++;
    for (size_t c = 0; c < kComponents; c++) st->second.component_ns[c] += r.component_ns[c];
  }

  breaker_.observe(r.id.tenant, r.id.agent, r.wall_ns(), r.end_ns, r.stage);

  auto g = detector_.observe(r);
  if (!g) return;
  if (hints_) {
    // Explain again with the other families' evidence (asked for glitches only: it costs
    // map lookups). The profile did not learn from this glitch, so it is the same one.
    g->verdict = explain(r, detector_.profile(r.id.tenant, r.stage), hints_(r));
    if (!g->verdict.culprits.empty()) {
      g->cause = component_name(g->verdict.culprits.front().component);
    }
  }
  if (st != stages_.end()) st->second.glitches++;
  if (!p && !r.id.synthetic) p = pending_for(r.id.pid, r.id.request_id, r.end_ns);
  if (p) p->glitches.push_back(*g);
  emit_or_park(std::move(*g), r, out);
}

void GlitchAnalyzer::emit_or_park(Glitch g, const StageRecord& r, AnalyzerOutput& out) {
  const bool timed_evidence = g.cause == component_name(Component::runqueue) ||
                              g.cause == component_name(Component::cpu_throttled) ||
                              r.between_calls_ns > 0;
  if (!hints_ || settings_.evidence_delay_ns == 0 || !timed_evidence ||
      parked_.size() >= settings_.max_parked) {
    emit(std::move(g), out);
    return;
  }
  parked_.push_back({std::move(g), r, r.end_ns + settings_.evidence_delay_ns});
}

void GlitchAnalyzer::release_parked(uint64_t now_ns, AnalyzerOutput& out, bool all) {
  while (!parked_.empty() && (all || parked_.front().due_ns <= now_ns)) {
    Parked p = std::move(parked_.front());
    parked_.pop_front();
    StageRecord& r = p.stage;
    const EvidenceHints hints = hints_(r);
    place_between_calls(r, hints);  // a recipe request whose evidence came only now
    p.glitch.component_ns = r.component_ns;
    p.glitch.verdict = explain(r, detector_.profile(r.id.tenant, r.stage), hints);
    if (!p.glitch.verdict.culprits.empty()) {
      p.glitch.cause = component_name(p.glitch.verdict.culprits.front().component);
    }
    emit(std::move(p.glitch), out);
  }
}

void GlitchAnalyzer::on_request(const RequestRecord& r, AnalyzerOutput& out) {
  TenantSummary& t = tenant(r.id.tenant);
  t.requests++;
  if (r.status != 0) t.errors++;
  entropy_.end_request(r.id.pid, r.id.request_id);

  auto it = r.id.synthetic ? pending_.end() : pending_.find({r.id.pid, r.id.request_id});
  std::vector<Glitch> stage_glitches;
  std::vector<StageRecord> stages;
  if (it != pending_.end()) {
    stage_glitches = std::move(it->second.glitches);
    stages = std::move(it->second.stages);
    pending_.erase(it);
  }
  // A request grouped from recipe calls is judged as a stage, with its time between calls.
  std::optional<Glitch> g;
  if (r.recipe) {
    StageRecord as_stage = recipe_request_stage(r);
    const EvidenceHints hints = hints_ ? hints_(as_stage) : EvidenceHints{};
    place_between_calls(as_stage, hints);
    g = detector_.observe(as_stage, hints);
    out.recipe_requests.push_back(std::move(as_stage));
  } else {
    g = detector_.observe(r);
  }
  if (g) {
    // A slow request is explained by its slowest glitching stage, when it has one (a recipe
    // request was explained by its own components, its calls' included).
    auto worst = std::max_element(
        stage_glitches.begin(), stage_glitches.end(),
        [](const Glitch& a, const Glitch& b) { return a.check.wall_ns < b.check.wall_ns; });
    if (!r.recipe && worst != stage_glitches.end()) {
      g->verdict.culprits = worst->verdict.culprits;
      g->verdict.evidence += ": " + worst->verdict.evidence;
      g->cause = worst->cause;
    }
    stage_glitches.push_back(*g);
    if (r.recipe) {
      emit_or_park(std::move(*g), out.recipe_requests.back(), out);
    } else {
      emit(std::move(*g), out);
    }
  }
  if (!settings_.collect_traces) return;
  if (settings_.glitched_traces_only && stage_glitches.empty()) return;
  RequestTrace trace;
  trace.request = r;
  trace.stages = std::move(stages);
  std::stable_sort(
      trace.stages.begin(), trace.stages.end(),
      [](const StageRecord& a, const StageRecord& b) { return a.start_ns < b.start_ns; });
  trace.glitches = std::move(stage_glitches);
  trace.trace_id = r.id.trace_id;
  trace.trace_id_from_agent = !r.id.trace_id.empty() && !r.id.derived_trace_id;
  trace.unix_offset_ns = unix_offset_ns_;
  if (trace.trace_id.empty()) return;  // synthetic requests: nothing to join a trace to
  out.traces.push_back(std::move(trace));
}

void GlitchAnalyzer::on_cache(const CacheRecord& r, AnalyzerOutput& out) {
  TenantSummary& t = tenant(r.id.tenant);
  t.cache_lookups++;
  if (r.result == 1) t.cache_misses++;
  if (r.result == 2) t.cache_stales++;
  cache_loop_.observe(r);
  if (auto g = caches_.observe(r)) emit(std::move(*g), out);
}

void GlitchAnalyzer::on_quality(const QualityRecord& r, AnalyzerOutput& out) {
  if (auto g = entropy_.observe(r)) {
    if (Pending* p = pending_for(r.id.pid, r.id.request_id, r.time_ns)) p->glitches.push_back(*g);
    emit(std::move(*g), out);
  }
}

void GlitchAnalyzer::on_process_exit(uint32_t pid) {
  entropy_.end_process(pid);
  std::erase_if(pending_, [pid](const auto& kv) { return kv.first.first == pid; });
}

void GlitchAnalyzer::emit(Glitch g, AnalyzerOutput& out) {
  glitches_total_++;
  if (g.stage != GlitchDetector::kRequestStage) tenant(g.tenant).glitches++;
  // Labels fold when counted (sticky top-K), so every series, "__other__" included, only
  // grows; causes are bounded by the component names and the detectors' causes.
  glitch_counts_[{glitch_tenants_.admit(g.tenant), glitch_agents_.admit(g.agent),
                  glitch_stages_.admit(g.stage), g.cause}]++;
  GlitchKey key{g.tenant, g.stage, g.cause};
  auto top = top_.find(key);
  if (top == top_.end() && top_.size() < settings_.glitch.max_series) {
    top = top_.emplace(std::move(key), std::vector<Glitch>{}).first;
  }
  if (top != top_.end()) {
    auto& v = top->second;
    if (v.size() < kTopPerCause || slower(g, v.back())) {
      v.push_back(g);
      std::stable_sort(v.begin(), v.end(), slower);
      if (v.size() > kTopPerCause) v.pop_back();
    }
  }
  out.glitches.push_back(std::move(g));
}

void GlitchAnalyzer::continue_counters_of(GlitchAnalyzer& previous) {
  glitch_tenants_ = std::move(previous.glitch_tenants_);
  glitch_agents_ = std::move(previous.glitch_agents_);
  glitch_stages_ = std::move(previous.glitch_stages_);
  glitch_counts_ = std::move(previous.glitch_counts_);
  glitches_total_ = previous.glitches_total_;
}

void GlitchAnalyzer::tick(uint64_t now_ns) {
  std::erase_if(pending_, [&](const auto& kv) {
    const bool stale = now_ns > kv.second.first_seen_ns &&
                       now_ns - kv.second.first_seen_ns > settings_.pending_timeout_ns;
    if (stale) dropped_requests_++;
    return stale;
  });
}

void GlitchAnalyzer::collect(MetricSet& out, uint64_t now_ns) const {
  for (const auto& [key, n] : glitch_counts_) {
    const auto& [tenant, agent, stage, cause] = key;
    out.add(metric::kGlitches, MetricType::Counter,
            "Requests and stages slower than their SLO or far above their recent P99, cache "
            "breakdowns and output-entropy spikes, by the cause their verdict names",
            {{"tenant", tenant}, {"agent", agent}, {"stage", stage}, {"cause", cause}},
            static_cast<double>(n));
  }

  LabelBudget breaker_tenants(settings_.top_k), agents(settings_.top_k);
  std::map<std::pair<std::string, std::string>, double> open;
  for (const auto& e : breaker_.entries(now_ns)) {
    auto& v = open[{breaker_tenants.admit(e.tenant), agents.admit(e.agent)}];
    v = std::max(v, e.state == BreakerState::open ? 1.0 : 0.0);
  }
  for (const auto& [key, v] : open) {
    out.add(metric::kCircuitBreakerOpen, MetricType::Gauge,
            "Whether the circuit breaker of a tenant and agent is open (1): it trips after "
            "consecutive slow stages and closes after a quiet period",
            {{"tenant", key.first}, {"agent", key.second}}, v);
  }
  out.add(metric::kCircuitBreakerTrips, MetricType::Counter, "Times a circuit breaker opened", {},
          static_cast<double>(breaker_.trips()));

  for (const auto& c : caches_.snapshot(now_ns)) {
    const Labels l{{"tenant", c.tenant}, {"cache", c.cache}};
    out.add(metric::kCacheBreakdownRatio, MetricType::Gauge,
            "Share of a cache's lookups that missed or returned stale results over the "
            "breakdown window",
            l, c.ratio);
    out.add(metric::kCacheBreakdowns, MetricType::Counter,
            "Times a tenant's cache entered breakdown", l, static_cast<double>(c.breakdowns));
    out.add(metric::kCacheCompetition, MetricType::Gauge,
            "Competition index over the breakdown window: the tenant's share of the cache's "
            "misses and stale results times its own miss ratio (0 alone in the cache: one "
            "name in one process)",
            l, c.competition);
    for (auto [q, v] :
         {std::pair{"0.95", c.stale_age_p95_ns}, std::pair{"0.99", c.stale_age_p99_ns}}) {
      Labels ql = l;
      ql.emplace_back("quantile", q);
      out.add(metric::kCacheStaleAgeSeconds, MetricType::Gauge,
              "Age of the stale results a cache returned over the breakdown window, by quantile",
              ql, static_cast<double>(v) * 1e-9, "seconds");
    }
  }
  out.add(metric::kGlitchRequestsDropped, MetricType::Counter,
          "Requests whose stages were not kept for trace export (too many pending, or never "
          "ended)",
          {}, static_cast<double>(dropped_requests_));
}

AnalyzerSummary GlitchAnalyzer::summary(uint64_t now_ns) const {
  AnalyzerSummary s;
  for (const auto& [_, t] : tenants_) s.tenants.push_back(t);
  for (const auto& [key, st] : stages_) {
    StageSummary ss;
    ss.tenant = key.first;
    ss.stage = key.second;
    ss.count = st.count;
    if (st.window.count(now_ns) > 0) {
      ss.p50_ns = st.window.quantile(now_ns, 0.50);
      ss.p99_ns = st.window.quantile(now_ns, 0.99);
    }
    ss.glitches = st.glitches;
    ss.component_ns = st.component_ns;
    s.stages.push_back(std::move(ss));
  }
  s.caches = caches_.snapshot(now_ns);
  s.cache_loop = cache_loop_.summary();
  for (const auto& [_, v] : top_) s.top_glitches.insert(s.top_glitches.end(), v.begin(), v.end());
  std::stable_sort(s.top_glitches.begin(), s.top_glitches.end(), slower);
  s.glitches = glitches_total_;
  s.breaker_trips = breaker_.trips();
  return s;
}

}  // namespace tailcause::core
