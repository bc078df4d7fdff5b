// SPDX-License-Identifier: Apache-2.0
#include "core/detect/incident_detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/detect/verdict.h"

namespace tailcause::core {

namespace {
// The baseline median is a walk over its buckets: refresh it every few learned samples (it
// moves by well under a bucket in that many at any useful horizon).
constexpr uint64_t kMedianRefresh = 8;
}  // namespace

IncidentConfig incident_config(const Config& config) {
  const IncidentSettings& i = config.glitch.incident;
  IncidentConfig c;
  c.enabled = i.enabled;
  c.factor = i.factor;
  c.min_samples = i.min_samples;
  c.horizon = i.horizon;
  c.window = i.window;
  c.min_excess_ns = static_cast<uint64_t>(i.min_excess_ms * 1e6);
  c.quiet_ns = static_cast<uint64_t>(i.quiet_s) * 1'000'000'000;
  c.top_k = config.top_k;
  c.max_series = config.limits.stage_series;
  return c;
}

const IncidentStage& Incident::leading() const {
  static const IncidentStage kNone{};
  if (stages.empty()) return kNone;
  return *std::max_element(stages.begin(), stages.end(),
                           [](const auto& a, const auto& b) { return a.slowed < b.slowed; });
}

std::string Incident::describe() const {
  const IncidentStage& l = leading();
  std::string s = fmt::format("{} {:.1f}x its {} baseline (peak {:.1f}x)", l.stage, median_ratio,
                              format_duration(l.baseline_ns), peak_ratio);
  if (stages.size() > 1) {
    std::string others;
    for (const auto& st : stages)
      if (&st != &l) others += (others.empty() ? "" : ", ") + st.stage;
    s += " with " + others;
  }
  s += fmt::format(", {} stage{} slowed", format_count(slowed), slowed == 1 ? "" : "s");
  if (cause != "slow") s += fmt::format(", {} {:.0f}% of the extra time", cause, cause_share * 100);
  return s;
}

IncidentDetector::IncidentDetector(IncidentConfig config)
    : config_(config),
      enter_factor_(std::pow(config_.factor, kEnterExponent)),
      exit_factor_(std::sqrt(config_.factor)),
      tenants_(config_.top_k),
      stages_(config_.top_k) {
  if (!(config_.factor > 1.0)) throw std::invalid_argument("IncidentConfig: factor must be > 1");
  if (config_.window < 3) throw std::invalid_argument("IncidentConfig: window must be >= 3");
  if (config_.horizon == 0) throw std::invalid_argument("IncidentConfig: horizon must be > 0");
}

double IncidentDetector::window_quantile(const Series& s, double q) const {
  std::vector<double> r;
  r.reserve(s.recent.size());
  for (const auto& x : s.recent) r.push_back(x.test_ratio);
  auto at = r.begin() + static_cast<std::ptrdiff_t>(static_cast<double>(r.size() - 1) * q + 0.5);
  std::nth_element(r.begin(), at, r.end());
  return *at;
}

void IncidentDetector::learn(Series& s, const Sample& sample) {
  s.baseline.add(sample.wall_ns);
  const double n = static_cast<double>(std::min(s.baseline.count(), config_.horizon));
  for (size_t c = 0; c < kComponents; c++)
    s.mix[c] += (static_cast<double>(sample.component_ns[c]) - s.mix[c]) / n;
  if (s.median_ns == 0 || s.baseline.count() % kMedianRefresh == 0)
    s.median_ns = s.baseline.median();
}

void IncidentDetector::update_cause(Incident& inc) const {
  const auto& excess = inc.leading().excess_ns;
  double grown = 0;
  size_t best = kComponents;
  for (size_t c = 0; c < kComponents; c++) {
    if (excess[c] <= 0) continue;
    grown += excess[c];
    if (best == kComponents || excess[c] > excess[best]) best = c;
  }
  if (best == kComponents) {
    inc.cause = "slow";
    inc.cause_share = 0;
  } else {
    inc.cause = component_name(static_cast<Component>(best));
    inc.cause_share = excess[best] / grown;
  }
}

void IncidentDetector::count_slowed(Active& a, Series& s, const std::string& stage,
                                    Sample& sample) {
  if (sample.counted || sample.test_ratio < config_.factor) return;
  sample.counted = true;
  Incident& inc = a.incident;
  inc.slowed++;
  inc.start_ns = std::min(inc.start_ns, sample.start_ns);
  inc.end_ns = std::max(inc.end_ns, sample.end_ns);
  inc.peak_ratio = std::max(inc.peak_ratio, sample.ratio);
  a.ratios.add(static_cast<uint64_t>(sample.ratio * kRatioScale));
  inc.median_ratio = static_cast<double>(a.ratios.median()) / kRatioScale;
  for (auto& st : inc.stages) {
    if (st.stage != stage) continue;
    st.slowed++;
    st.peak_ratio = std::max(st.peak_ratio, sample.ratio);
    for (size_t c = 0; c < kComponents; c++)
      st.excess_ns[c] += static_cast<double>(sample.component_ns[c]) - s.mix[c];
  }
  for (size_t c = 0; c < kComponents; c++)
    inc.excess_ns[c] += static_cast<double>(sample.component_ns[c]) - s.mix[c];
  update_cause(inc);
  dirty_.insert(inc.id);
}

void IncidentDetector::begin_shift(Series& s, const std::string& tenant, const std::string& stage) {
  auto it = active_.find(tenant);
  const bool opened = it == active_.end();
  if (opened) {
    it = active_.emplace(tenant, Active{}).first;
    Incident& inc = it->second.incident;
    inc.id = next_id_++;
    inc.tenant = tenant;
    inc.start_ns = UINT64_MAX;
    it->second.tenant_label = tenants_.admit(tenant);
  }
  Active& a = it->second;
  Incident& inc = a.incident;
  const bool known = std::any_of(inc.stages.begin(), inc.stages.end(),
                                 [&](const IncidentStage& st) { return st.stage == stage; });
  if (!known) inc.stages.push_back(IncidentStage{stage, s.median_ns, 0, 0, {}});
  s.shifted = true;
  a.shifted_series++;
  // The shift began before the test saw it: the window's slowed stages are part of it, and
  // maybe some before the window.
  for (Sample& x : s.recent) count_slowed(a, s, stage, x);
  backdate(a, s, stage);
  if (opened) {
    inc.first_stage = stage;
    inc.first_cause = inc.cause;
    counts_[{a.tenant_label, stages_.admit(stage), inc.cause}]++;
    gauge_tenants_.insert(a.tenant_label);
  }
  dirty_.insert(inc.id);
}

// The test fires once most of the window is slowed. A stage slowed one time in two (a cache in
// front of the disk, say) gets there seconds after the shift began, and those first slowed
// stages have left the window. The start is estimated by CUSUM (Page, 1954) over the stages
// before the window, walking back: a slowed one adds 1 - p, another one -p, with p half the
// window's slowed share; the start is where the sum peaks, so the walk reaches back across
// stretches slowed at least p of the time and stops at normal ones, and at an earlier incident.
// Their components are not kept (Past), so they count as slowed stages but not in the cause.
void IncidentDetector::backdate(Active& a, Series& s, const std::string& stage) {
  size_t slowed = 0;
  for (const Sample& x : s.recent) slowed += x.test_ratio >= config_.factor;
  const double p = 0.5 * static_cast<double>(slowed) / static_cast<double>(s.recent.size());
  double sum = 0, best = 0;
  size_t from = s.past.size();
  for (size_t i = s.past.size(); i-- > 0;) {
    if (s.past[i].counted) break;
    sum += (s.past[i].slowed ? 1.0 : 0.0) - p;
    if (sum > best) {
      best = sum;
      from = i;
    }
  }
  Incident& inc = a.incident;
  for (size_t i = from; i < s.past.size(); ++i) {
    Past& x = s.past[i];
    if (!x.slowed) continue;
    x.counted = true;
    inc.slowed++;
    inc.start_ns = std::min(inc.start_ns, x.start_ns);
    for (auto& st : inc.stages)
      if (st.stage == stage) st.slowed++;
  }
}

void IncidentDetector::observe(const StageRecord& r) {
  if (!config_.enabled || !r.owner_stage()) return;
  maybe_end(r.id.tenant, r.end_ns);
  auto key = std::make_pair(r.id.tenant, r.stage);
  auto it = series_.find(key);
  if (it == series_.end()) {
    if (series_.size() >= config_.max_series) {
      untracked_++;
      return;
    }
    it = series_.emplace(std::move(key), Series(config_.horizon)).first;
  }
  Series& s = it->second;
  const std::string& tenant = it->first.first;
  const std::string& stage = it->first.second;

  Sample sample;
  sample.start_ns = r.start_ns;
  sample.end_ns = r.end_ns;
  sample.wall_ns = r.wall_ns();
  sample.component_ns = r.component_ns;
  // A young baseline (fewer than min_samples learned) judges gross shifts only.
  const uint64_t learned = s.baseline.count();
  const bool young = learned < config_.min_samples;
  const bool warm =
      s.median_ns > 0 && learned >= std::min<uint64_t>(config_.min_samples, kYoungSamples);
  if (warm) {
    const double median = static_cast<double>(s.median_ns);
    const double floor = static_cast<double>(config_.min_excess_ns) / (config_.factor - 1.0);
    sample.ratio = static_cast<double>(sample.wall_ns) / median;
    sample.test_ratio = static_cast<double>(sample.wall_ns) / std::max(median, floor);
  }
  s.recent.push_back(sample);

  auto act = active_.find(tenant);
  if (s.recent.size() > config_.window) {
    // Learned a window late, and never while the tenant has an incident: the stages that
    // revealed a shift, and all the shift's, stay out of the baseline.
    const Sample& old = s.recent.front();
    if (act == active_.end()) learn(s, old);
    s.past.push_back({old.start_ns, old.test_ratio >= config_.factor, old.counted});
    if (s.past.size() > kPastWindows * config_.window) s.past.pop_front();
    s.recent.pop_front();
  }
  if (!warm || s.recent.size() < config_.window) return;
  test_shift(s, tenant, stage, young, r.end_ns);
}

void IncidentDetector::test_shift(Series& s, const std::string& tenant, const std::string& stage,
                                  bool young, uint64_t end_ns) {
  if (!s.shifted) {
    const double enter = young ? std::max(enter_factor_, kGrossFactor) : enter_factor_;
    if (window_quantile(s, 0.5) >= enter) begin_shift(s, tenant, stage);
    return;
  }
  Active& a = active_.at(tenant);  // a shifted series belongs to its tenant's active incident
  count_slowed(a, s, stage, s.recent.back());
  // Left once three quarters of the window are back under sqrt(factor): a fault that slows
  // half of the stages (a cache in front of a slow disk) keeps its median near the threshold,
  // and would flap between incidents on the median. Or once no more than a fifth of the window
  // is slowed (at factor or more): a fault that leaves the stage at 1.5x for good (the page
  // cache refilled in smaller pages after a memory limit) is over as a fault; kept open, its
  // incident would swallow every later one of the tenant. The baseline then learns the new
  // normal.
  if (window_quantile(s, 0.75) < exit_factor_ || window_quantile(s, 0.8) < config_.factor) {
    s.shifted = false;
    if (--a.shifted_series == 0) a.quiet_since_ns = end_ns;
    dirty_.insert(a.incident.id);
  }
}

std::vector<SavedBaseline> IncidentDetector::saved_baselines() const {
  std::vector<SavedBaseline> out;
  for (const auto& [key, s] : series_) {
    if (s.baseline.count() < kYoungSamples) continue;
    out.push_back({key.first, key.second, s.baseline.state(), s.mix});
  }
  return out;
}

size_t IncidentDetector::restore_baselines(const std::vector<SavedBaseline>& saved) {
  size_t taken = 0;
  for (const auto& b : saved) {
    if (series_.size() >= config_.max_series) break;
    auto latency = DecayingQuantile::restore(b.latency, config_.horizon);
    if (!latency || series_.count({b.tenant, b.stage})) continue;
    Series s(config_.horizon);
    s.baseline = *latency;
    s.median_ns = s.baseline.median();
    for (size_t c = 0; c < kComponents; c++)
      s.mix[c] = std::isfinite(b.mix[c]) && b.mix[c] > 0 ? b.mix[c] : 0.0;
    series_.emplace(std::make_pair(b.tenant, b.stage), std::move(s));
    taken++;
  }
  return taken;
}

void IncidentDetector::maybe_end(const std::string& tenant, uint64_t now_ns) {
  auto it = active_.find(tenant);
  if (it == active_.end() || it->second.shifted_series > 0) return;
  if (now_ns >= it->second.quiet_since_ns && now_ns - it->second.quiet_since_ns >= config_.quiet_ns)
    end(it);
}

void IncidentDetector::end(std::map<std::string, Active>::iterator it) {
  Incident inc = std::move(it->second.incident);
  inc.active = false;
  for (auto& [key, s] : series_)
    if (key.first == it->first) s.shifted = false;
  active_.erase(it);
  dirty_.insert(inc.id);
  history_.push_back(std::move(inc));
  while (history_.size() > config_.max_history) history_.pop_front();
}

void IncidentDetector::tick(uint64_t now_ns) {
  std::vector<std::string> tenants;
  for (const auto& [t, _] : active_) tenants.push_back(t);
  for (const auto& t : tenants) maybe_end(t, now_ns);
}

void IncidentDetector::end_all(uint64_t now_ns) {
  (void)now_ns;  // the end is the last slowed stage's, not the moment we stop watching
  while (!active_.empty()) end(active_.begin());
}

std::vector<Incident> IncidentDetector::drain_changed() {
  std::vector<Incident> out;
  for (uint64_t id : dirty_) {
    bool found = false;
    for (const auto& [_, a] : active_) {
      if (a.incident.id == id) {
        out.push_back(a.incident);
        found = true;
      }
    }
    if (found) continue;
    for (const auto& inc : history_)
      if (inc.id == id) out.push_back(inc);
  }
  dirty_.clear();
  return out;
}

std::vector<Incident> IncidentDetector::incidents() const {
  std::vector<Incident> out;
  for (const auto& [_, a] : active_) out.push_back(a.incident);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) out.push_back(*it);
  return out;
}

void IncidentDetector::collect(MetricSet& out) const {
  for (const auto& [key, n] : counts_) {
    const auto& [tenant, stage, cause] = key;
    out.add(metric::kIncidents, MetricType::Counter,
            "Sustained slowdowns: incidents opened when a tenant's stage ran at incident.factor "
            "times its learned baseline median or more, by the stage that shifted first and the "
            "component that grew most when it opened",
            {{"tenant", tenant}, {"stage", stage}, {"cause", cause}}, static_cast<double>(n));
  }
  std::map<std::string, double> active;
  for (const auto& t : gauge_tenants_) active[t] = 0;
  for (const auto& [_, a] : active_) active[a.tenant_label] += 1;
  for (const auto& [tenant, v] : active) {
    out.add(metric::kIncidentsActive, MetricType::Gauge,
            "Incidents under way (1 while a tenant's stages run well above their baseline)",
            {{"tenant", tenant}}, v);
  }
}

const DecayingQuantile* IncidentDetector::baseline(const std::string& tenant,
                                                   const std::string& stage) const {
  auto it = series_.find({tenant, stage});
  return it == series_.end() ? nullptr : &it->second.baseline;
}

bool IncidentDetector::shifted(const std::string& tenant, const std::string& stage) const {
  auto it = series_.find({tenant, stage});
  return it != series_.end() && it->second.shifted;
}

}  // namespace tailcause::core
