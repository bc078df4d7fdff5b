// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/metric_history.h"

#include <algorithm>

namespace tailcause::core {
namespace {

constexpr int64_t kHourNs = 3600LL * 1'000'000'000;

std::string series_key(const std::string& family, const Labels& labels) {
  std::string key = family;
  for (const auto& [k, v] : labels) {
    key += '\x1f';
    key += k;
    key += '=';
    key += v;
  }
  return key;
}

// Cumulative counts with +Inf last.
std::vector<uint64_t> cumulative_of(const HistogramData& h) {
  std::vector<uint64_t> out;
  out.reserve(h.buckets.size() + 1);
  for (const auto& b : h.buckets) out.push_back(b.second);
  out.push_back(h.count);
  return out;
}

void add_into(HistoryDelta& into, const HistoryDelta& d) {
  into.value += d.value;
  if (into.buckets.size() < d.buckets.size()) into.buckets.resize(d.buckets.size(), 0);
  for (size_t i = 0; i < d.buckets.size(); ++i) into.buckets[i] += d.buckets[i];
}

}  // namespace

const std::string& HistorySeries::label(const std::string& name) const {
  static const std::string kEmpty;
  for (const auto& [k, v] : labels)
    if (k == name) return v;
  return kEmpty;
}

uint64_t HistoryDelta::count() const {
  uint64_t n = 0;
  for (uint64_t b : buckets) n += b;
  return n;
}

const HistoryDelta* HistoryTick::find(uint32_t id) const {
  auto it = std::lower_bound(deltas.begin(), deltas.end(), id,
                             [](const HistoryDelta& d, uint32_t v) { return d.id < v; });
  return it != deltas.end() && it->id == id ? &*it : nullptr;
}

MetricHistory::MetricHistory(HistorySettings settings) : settings_(std::move(settings)) {
  if (settings_.slots == 0) settings_.slots = 1;
  for (const auto& f : settings_.hourly_families) settings_.families.insert(f);
}

uint32_t MetricHistory::intern(const MetricFamily& family, const Sample& sample) {
  const std::string key = series_key(family.name, sample.labels);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (series_.size() >= settings_.max_series) {
    ++dropped_series_;
    return 0;
  }
  HistorySeries s;
  s.id = next_id_++;
  s.family = family.name;
  s.type = family.type;
  s.labels = sample.labels;
  for (const auto& b : sample.histogram.buckets) s.bounds.push_back(b.first);
  ids_.emplace(key, s.id);
  const uint32_t id = s.id;
  series_.emplace(id, std::move(s));
  return id;
}

void MetricHistory::add(const MetricSet& scrape, int64_t unix_ns) {
  HistoryTick tick;
  tick.unix_ns = unix_ns;
  for (const auto& family : scrape.families()) {
    if (settings_.gauge_families.count(family.name)) {
      gauges_[family.name] = family.samples;
      continue;
    }
    if (!settings_.families.count(family.name) || family.type == MetricType::Gauge) continue;
    const bool hourly =
        family.type == MetricType::Histogram && settings_.hourly_families.count(family.name);
    for (const auto& sample : family.samples) {
      HistoryDelta d;
      if (!delta_of(family, sample, unix_ns, d)) continue;
      if (hourly) add_to_hour(unix_ns, d);
      tick.deltas.push_back(std::move(d));
    }
  }
  std::sort(tick.deltas.begin(), tick.deltas.end(),
            [](const HistoryDelta& a, const HistoryDelta& b) { return a.id < b.id; });
  ticks_.push_back(std::move(tick));
  while (ticks_.size() > settings_.slots) ticks_.pop_front();
  // Once per ring's length, forget series that are gone (a tenant's cgroup removed).
  if (++adds_ % settings_.slots == 0) forget_unused(unix_ns);
}

bool MetricHistory::delta_of(const MetricFamily& family, const Sample& sample, int64_t unix_ns,
                             HistoryDelta& d) {
  const uint32_t id = intern(family, sample);
  if (id == 0) return false;
  HistorySeries& s = series_.at(id);
  Baseline& base = baselines_[id];
  const bool first = base.seen_ns == 0;
  base.seen_ns = unix_ns;
  d.id = id;
  if (family.type == MetricType::Histogram) {
    const bool counted = histogram_delta(sample.histogram, s, base, d);
    return !first && counted;
  }
  const bool reset = sample.value < base.value;
  d.value = sample.value - (reset ? 0 : base.value);
  base.value = sample.value;
  return !first && d.value != 0;
}

bool MetricHistory::histogram_delta(const HistogramData& h, HistorySeries& s, Baseline& base,
                                    HistoryDelta& d) {
  std::vector<uint64_t> cum = cumulative_of(h);
  if (cum.size() != s.bounds.size() + 1) {  // the bounds changed: start again
    s.bounds.clear();
    for (const auto& b : h.buckets) s.bounds.push_back(b.first);
    base.cumulative.clear();
  }
  bool reset = base.cumulative.size() != cum.size();
  for (size_t i = 0; !reset && i < cum.size(); ++i) reset = cum[i] < base.cumulative[i];
  const double prev_sum = reset ? 0 : base.value;
  std::vector<uint64_t> delta_cum(cum.size());
  for (size_t i = 0; i < cum.size(); ++i) delta_cum[i] = cum[i] - (reset ? 0 : base.cumulative[i]);
  d.buckets.resize(cum.size());
  for (size_t i = 0; i < cum.size(); ++i) {
    const uint64_t below = i == 0 ? 0 : delta_cum[i - 1];
    d.buckets[i] = delta_cum[i] >= below ? delta_cum[i] - below : 0;
  }
  // Kept up to the last bucket that counted: a stage's observations fill a few buckets near
  // the low end, and the ring holds a delta per busy series per tick.
  while (!d.buckets.empty() && d.buckets.back() == 0) d.buckets.pop_back();
  d.buckets.shrink_to_fit();
  d.value = std::max(0.0, h.sum - prev_sum);
  base.cumulative = std::move(cum);
  base.value = h.sum;
  return delta_cum.back() != 0;
}

// The hourly view (TCP service pairs): one slot per wall-clock hour, the oldest dropped.
void MetricHistory::add_to_hour(int64_t unix_ns, const HistoryDelta& d) {
  const int64_t hour = unix_ns / kHourNs * 3600;
  if (hours_.empty() || hours_.back().start_unix_s != hour) {
    hours_.push_back(HistoryHour{hour, {}});
    while (hours_.size() > settings_.hours) hours_.pop_front();
  }
  HistoryDelta& h = hours_.back().deltas[d.id];
  h.id = d.id;
  add_into(h, d);
  h.buckets.resize(std::max(h.buckets.size(), series_.at(d.id).bounds.size() + 1), 0);
}

void MetricHistory::forget_unused(int64_t now_ns) {
  std::set<uint32_t> used;
  for (const auto& t : ticks_)
    for (const auto& d : t.deltas) used.insert(d.id);
  for (const auto& h : hours_)
    for (const auto& [id, d] : h.deltas) used.insert(id);
  for (auto it = series_.begin(); it != series_.end();) {
    const auto base = baselines_.find(it->first);
    const bool current = base != baselines_.end() && base->second.seen_ns == now_ns;
    if (used.count(it->first) || current) {
      ++it;
      continue;
    }
    ids_.erase(series_key(it->second.family, it->second.labels));
    baselines_.erase(it->first);
    it = series_.erase(it);
  }
}

std::vector<const HistorySeries*> MetricHistory::series(const std::string& family) const {
  std::vector<const HistorySeries*> out;
  for (const auto& [id, s] : series_)
    if (s.family == family) out.push_back(&s);
  std::sort(out.begin(), out.end(),
            [](const HistorySeries* a, const HistorySeries* b) { return a->id < b->id; });
  return out;
}

const HistorySeries* MetricHistory::series(uint32_t id) const {
  auto it = series_.find(id);
  return it == series_.end() ? nullptr : &it->second;
}

const std::vector<Sample>& MetricHistory::gauges(const std::string& family) const {
  static const std::vector<Sample> kNone;
  auto it = gauges_.find(family);
  return it == gauges_.end() ? kNone : it->second;
}

HistoryDelta MetricHistory::merged(uint32_t id, int64_t from_ns, int64_t to_ns) const {
  HistoryDelta out;
  out.id = id;
  for (const auto& t : ticks_) {
    if (t.unix_ns <= from_ns || t.unix_ns > to_ns) continue;
    if (const HistoryDelta* d = t.find(id)) add_into(out, *d);
  }
  // Every bucket, as a scrape has them (ticks keep theirs only up to the last that counted).
  if (const HistorySeries* s = series(id); s && !s->bounds.empty()) {
    out.buckets.resize(std::max(out.buckets.size(), s->bounds.size() + 1), 0);
  }
  return out;
}

double histogram_quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& buckets,
                          double q) {
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0 || bounds.empty()) return 0;
  const double rank = q * static_cast<double>(total);
  uint64_t below = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] == 0 || static_cast<double>(below + buckets[i]) < rank) {
      below += buckets[i];
      continue;
    }
    if (i >= bounds.size()) return bounds.back();  // +Inf: the last finite bound
    const double lo = i == 0 ? 0 : bounds[i - 1];
    const double hi = bounds[i];
    const double within = (rank - static_cast<double>(below)) / static_cast<double>(buckets[i]);
    return lo + (hi - lo) * std::clamp(within, 0.0, 1.0);
  }
  return bounds.back();
}

}  // namespace tailcause::core
