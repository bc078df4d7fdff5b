// SPDX-License-Identifier: Apache-2.0
#include "core/detect/glitch_detector.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/aggregate/bounded_map.h"

namespace tailcause::core {

const char* glitch_reason_name(GlitchReason r) {
  switch (r) {
    case GlitchReason::none: return "none";
    case GlitchReason::over_slo: return "over_slo";
    case GlitchReason::over_p99: return "over_p99";
    case GlitchReason::both: return "both";
  }
  return "none";
}

GlitchDetector::GlitchDetector(GlitchConfig config) : config_(std::move(config)) {
  if (config_.p99_factor <= 0) throw std::invalid_argument("GlitchConfig: p99_factor must be > 0");
}

uint64_t GlitchDetector::slo_for(const std::string& stage) const {
  if (stage == kRequestStage) return config_.request_slo_ns;
  auto it = config_.stage_slo_ns_by_stage.find(stage);
  return it != config_.stage_slo_ns_by_stage.end() ? it->second : config_.stage_slo_ns;
}

GlitchDetector::Series* GlitchDetector::series_for(const std::string& tenant,
                                                   const std::string& stage) {
  return bounded_slot(series_, {tenant, stage}, config_.max_series, untracked_, [this] {
    return Series{StreamingQuantile(config_.window_interval_ns, config_.window_intervals),
                  ComponentProfile(config_.profile_horizon)};
  });
}

std::string threshold_text(const GlitchCheck& c) {
  std::string slo = "over_slo " + format_duration(c.slo_ns);
  std::string p99;
  if (c.p99_ns) {
    const auto p = static_cast<double>(*c.p99_ns);
    p99 = fmt::format("over_p99 {} ({:g}x P99 {})",
                      format_duration(static_cast<uint64_t>(c.p99_factor * p)), c.p99_factor,
                      format_duration(*c.p99_ns));
  }
  switch (c.reason) {
    case GlitchReason::over_slo: return slo;
    case GlitchReason::over_p99: return p99;
    case GlitchReason::both: return slo + ", " + p99;
    case GlitchReason::none: break;
  }
  return "";
}

GlitchCheck GlitchDetector::check(Series* s, uint64_t wall_ns, uint64_t slo_ns, uint64_t now_ns) {
  GlitchCheck c;
  c.wall_ns = wall_ns;
  c.slo_ns = slo_ns;
  bool over_slo = wall_ns > slo_ns;
  bool over_p99 = false;
  // The threshold comes from the window before this sample, so it cannot vouch for itself.
  if (s != nullptr) {
    const bool fresh =
        s->p99_at_ns != 0 && now_ns >= s->p99_at_ns && now_ns - s->p99_at_ns < kP99RefreshNs;
    // Until the window is trusted, look again as soon as it holds enough samples.
    const bool newly_trusted = !s->p99_valid && s->window.count(now_ns) >= config_.min_samples;
    if (!fresh || newly_trusted) {
      s->p99_at_ns = now_ns ? now_ns : 1;
      s->p99_valid = s->window.count(now_ns) >= config_.min_samples;
      if (s->p99_valid) s->p99_ns = s->window.quantile(now_ns, 0.99);
    }
    if (s->p99_valid) {
      c.p99_ns = s->p99_ns;
      c.p99_factor = config_.p99_factor;
      over_p99 = static_cast<double>(wall_ns) > config_.p99_factor * static_cast<double>(s->p99_ns);
    }
  }
  if (over_slo && over_p99)
    c.reason = GlitchReason::both;
  else if (over_slo)
    c.reason = GlitchReason::over_slo;
  else if (over_p99)
    c.reason = GlitchReason::over_p99;
  return c;
}

std::optional<Glitch> GlitchDetector::observe(const StageRecord& r, const EvidenceHints& hints) {
  return observe(r, r.end_ns, hints);
}

std::optional<Glitch> GlitchDetector::observe(const StageRecord& r, uint64_t now_ns,
                                              const EvidenceHints& hints) {
  Series* s = series_for(r.id.tenant, r.stage);
  GlitchCheck c = check(s, r.wall_ns(), slo_for(r.stage), now_ns);
  // A uprobe recipe span too short to judge: its P99 rule is noise (see recipe_noise_floor_ns).
  if (r.recipe() && r.wall_ns() < config_.recipe_noise_floor_ns) {
    if (c.reason == GlitchReason::over_p99) c.reason = GlitchReason::none;
    if (c.reason == GlitchReason::both) c.reason = GlitchReason::over_slo;
  }
  std::optional<Glitch> out;
  if (c.glitch()) {
    // Explain against the profile as it stood before this record.
    out.emplace();
    out->tenant = r.id.tenant;
    out->agent = r.id.agent;
    out->stage = r.stage;
    out->trace_id = r.id.trace_id;
    out->check = c;
    out->verdict = explain(r, s ? &s->profile : nullptr, hints);
    out->pid = r.id.pid;
    out->request_id = r.id.request_id;
    out->start_ns = r.start_ns;
    out->end_ns = r.end_ns;
    out->component_ns = r.component_ns;
    out->page_cache_misses = r.page_cache_misses;
    out->cause = out->verdict.culprits.empty()
                     ? "slow"
                     : component_name(out->verdict.culprits.front().component);
  }
  if (s != nullptr) {
    // A stage over its P99 rule stays out of the window, so a fault cannot raise its own
    // threshold: its verdicts last as long as it does, up to the window's length, after which
    // a shift that outlasted the window is learned as the new normal (the window empties).
    if (!c.over_p99()) s->window.add(now_ns, r.wall_ns());
    if (!c.glitch()) s->profile.add(r);  // glitches would teach the profile their own fault
  }
  return out;
}

std::optional<Glitch> GlitchDetector::observe(const RequestRecord& r) {
  uint64_t wall = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
  Series* s = series_for(r.id.tenant, kRequestStage);
  GlitchCheck c = check(s, wall, config_.request_slo_ns, r.end_ns);
  if (s != nullptr && !c.over_p99()) s->window.add(r.end_ns, wall);  // as for stages
  if (!c.glitch()) return std::nullopt;
  Verdict v;
  v.evidence = std::string(kRequestStage) + " " + format_duration(wall);
  Glitch g;
  g.tenant = r.id.tenant;
  g.agent = r.id.agent;
  g.stage = kRequestStage;
  g.trace_id = r.id.trace_id;
  g.check = c;
  g.verdict = std::move(v);
  g.pid = r.id.pid;
  g.request_id = r.id.request_id;
  g.start_ns = r.start_ns;
  g.end_ns = r.end_ns;
  g.cause = "slow";
  return g;
}

const ComponentProfile* GlitchDetector::profile(const std::string& tenant,
                                                const std::string& stage) const {
  auto it = series_.find({tenant, stage});
  return it == series_.end() ? nullptr : &it->second.profile;
}

const StreamingQuantile* GlitchDetector::window(const std::string& tenant,
                                                const std::string& stage) const {
  auto it = series_.find({tenant, stage});
  return it == series_.end() ? nullptr : &it->second.window;
}

}  // namespace tailcause::core
