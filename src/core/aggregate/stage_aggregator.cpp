// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/stage_aggregator.h"

#include <algorithm>
#include <cmath>

#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "core/record/stage_kind.h"

namespace tailcause::core {
namespace {

constexpr char kSeparator = '\x1f';  // cannot occur in a number

// Bucket ranges (log2 slots of ns; le = 2^(slot+1) ns); durations: kDurationFirstSlot.. in
// histogram_conversion.h, shared with the stage heatmap.
constexpr size_t kTokenFirst = 12, kTokenLast = 32;  // 8.2 us .. 8.6 s
constexpr size_t kAgeFirst = 20, kAgeLast = 46;      // 2.1 ms .. 39 h
constexpr size_t kLayerFirst = 10, kLayerLast = 33;  // 2 us .. 17 s

// Entropy of an output distribution (nats or bits): fixed buckets, the last slot is +Inf.
constexpr std::array<double, 15> kEntropyBounds = {0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2,
                                                   2.5,  3,   4,    5,   6,    8, 10};

const char* const kCacheResults[3] = {"hit", "miss", "stale"};

}  // namespace

void ExemplarHistogram::observe(uint64_t ns, const std::string& trace_id, double unix_time) {
  const size_t s = log2_slot(ns, kSlots);
  slots_[s] += 1;
  sum_ns_ += ns;
  if (!trace_id.empty()) exemplars_[s] = Slot{trace_id, ns * 1e-9, unix_time};
}

uint64_t ExemplarHistogram::count() const {
  uint64_t n = 0;
  for (uint64_t v : slots_) n += v;
  return n;
}

HistogramData ExemplarHistogram::render(size_t first, size_t last) const {
  HistogramData h = log2_to_buckets(slots_, sum_ns_, 1e-9, first, last);
  const size_t buckets = h.buckets.size();
  h.exemplars.assign(buckets + 1, std::nullopt);
  for (size_t s = 0; s < kSlots; ++s) {
    const Slot& e = exemplars_[s];
    if (e.trace_id.empty()) continue;
    const size_t b = s < first ? 0 : (s > last ? buckets : s - first);
    auto& cur = h.exemplars[b];
    if (!cur || cur->timestamp.value_or(0) <= e.time) {
      cur = Exemplar{{{"trace_id", e.trace_id}}, e.value, e.time};
    }
  }
  return h;
}

ExemplarHistogram& ExemplarHistogram::operator+=(const ExemplarHistogram& o) {
  add_slots(slots_, o.slots_);
  sum_ns_ += o.sum_ns_;
  for (size_t s = 0; s < kSlots; ++s) {
    if (!o.exemplars_[s].trace_id.empty() && o.exemplars_[s].time >= exemplars_[s].time) {
      exemplars_[s] = o.exemplars_[s];
    }
  }
  return *this;
}

StageAggregator::StageSeries& StageAggregator::StageSeries::operator+=(const StageSeries& o) {
  duration += o.duration;
  add_slots(component_ns, o.component_ns);
  add_slots(helper_ns, o.helper_ns);
  helpers = helpers || o.helpers;
  page_cache_misses += o.page_cache_misses;
  major_faults += o.major_faults;
  bytes_read += o.bytes_read;
  records += o.records;
  return *this;
}

StageAggregator::RequestSeries& StageAggregator::RequestSeries::operator+=(const RequestSeries& o) {
  duration += o.duration;
  ttft += o.ttft;
  tpot += o.tpot;
  add_slots(entropy, o.entropy);
  entropy_sum += o.entropy_sum;
  ok += o.ok;
  error += o.error;
  records += o.records;
  return *this;
}

StageAggregator::CacheSeries& StageAggregator::CacheSeries::operator+=(const CacheSeries& o) {
  add_slots(results, o.results);
  hit_age += o.hit_age;
  any_action = any_action || o.any_action;
  add_slots(actions, o.actions);
  add_slots(entries, o.entries);
  if (!quota_bytes) quota_bytes = o.quota_bytes;
  records += o.records;
  return *this;
}

LayerTotals& LayerTotals::operator+=(const LayerTotals& o) {
  add_slots(slots, o.slots);
  sum_ns += o.sum_ns;
  return *this;
}

StageAggregator::StageAggregator(size_t top_k, SeriesLimits limits)
    : tenants_(top_k),
      agents_(top_k),
      stages_(top_k),
      caches_(top_k),
      layer_budget_(top_k),
      layer_folds_(layer_budget_),
      limits_(limits),
      stage_budget_(limits.stage),
      request_budget_(limits.request),
      cache_budget_(limits.cache) {}

template <typename Key, typename Series>
Series& StageAggregator::series(std::map<Key, Series>& family, SeriesBudget<Key>& budget, Key key,
                                const Key& overflow, double weight) {
  // A combination the label budgets folded whole is the overflow series already.
  if (key != overflow && !budget.keeps(key, weight)) return family[overflow];
  return family[std::move(key)];
}

namespace {

// Merges the series that `budget` evicted into the family's overflow series, counting their
// observations as folded.
template <typename Key, typename Series>
void fold_evicted(std::map<Key, Series>& family, SeriesBudget<Key>& budget, const Key& overflow) {
  for (const Key& key : budget.rebalance()) {
    auto it = family.find(key);
    if (it == family.end()) continue;
    budget.count_folded(it->second.records);
    family[overflow] += it->second;
    family.erase(it);
  }
}

const StageAggregator::StageKey kStageOverflow{kOtherLabel, kOtherLabel, kOtherLabel};
const std::pair<std::string, std::string> kPairOverflow{kOtherLabel, kOtherLabel};

}  // namespace

void StageAggregator::maybe_rebalance(uint64_t now_ns) {
  if (now_ns < last_rebalance_ns_ + kRebalanceNs) return;
  last_rebalance_ns_ = now_ns;
  fold_evicted(stage_series_, stage_budget_, kStageOverflow);
  fold_evicted(request_series_, request_budget_, kPairOverflow);
  fold_evicted(cache_series_, cache_budget_, kPairOverflow);
}

StageAggregator::TenantAgent StageAggregator::labels(const Identity& id) {
  return {tenants_.admit(id.tenant), agents_.admit(id.agent)};
}

// Counted once per request (its end record), not once per stage of it.
void StageAggregator::count_identity_errors(const Identity& id) {
  if (id.invalid_utf8) count_error(kErrorInvalidUtf8);
  if (id.bad_trace_id) count_error(kErrorBadTraceId);
}

void StageAggregator::add(const StageRecord& r) {
  auto [tenant, agent] = labels(r.id);
  // Fixed stage names are bounded by the SDK; free names compete for slots.
  const bool free_name = r.kind == stage_kind_value(StageKind::other);
  std::string stage = free_name ? stages_.admit(r.stage) : r.stage;
  if (r.invalid_name) count_error(kErrorInvalidUtf8);
  maybe_rebalance(r.end_ns);
  uint64_t weight = 0;
  for (uint64_t ns : r.component_ns) weight += ns;
  StageSeries& s = series(stage_series_, stage_budget_,
                          StageKey{std::move(tenant), std::move(agent), std::move(stage)},
                          kStageOverflow, static_cast<double>(weight));
  s.records += 1;
  // A worker span is part of a stage that its owner thread times; an aborted one is cut short.
  if (!r.worker() && !r.aborted()) {
    s.duration.observe(r.wall_ns(), r.id.trace_id, unix_time(r.end_ns));
  }
  // A helper's time runs in parallel with its owner's, which already waited for it (and, on
  // the critical path, took over its causes): apart, so the stage adds up to its wall time.
  auto& into = r.worker() ? s.helper_ns : s.component_ns;
  for (size_t c = 0; c < kComponents; ++c) into[c] += r.component_ns[c];
  s.helpers = s.helpers || r.worker();
  s.page_cache_misses += r.page_cache_misses;
  s.major_faults += r.major_faults;
  s.bytes_read += r.bytes_read;
}

void StageAggregator::add(const RequestRecord& r) {
  count_identity_errors(r.id);
  maybe_rebalance(r.end_ns);
  RequestSeries& s = series(request_series_, request_budget_, labels(r.id), kPairOverflow,
                            static_cast<double>(r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0));
  s.records += 1;
  const double when = unix_time(r.end_ns);
  s.duration.observe(r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0, r.id.trace_id, when);
  (r.status == 0 ? s.ok : s.error) += 1;
  if (auto ttft = r.time_to_first_token()) {
    s.ttft.observe(static_cast<uint64_t>(std::llround(*ttft * 1e9)), r.id.trace_id, when);
  }
  if (auto tpot = r.time_per_output_token()) {
    s.tpot.observe(static_cast<uint64_t>(std::llround(*tpot * 1e9)), r.id.trace_id, when);
  }
}

void StageAggregator::add(const CacheRecord& r) {
  if (r.result < 0 || r.result > 2) return;  // the kernel drops these already
  if (r.invalid_name) count_error(kErrorInvalidUtf8);
  CacheSeries& s =
      series(cache_series_, cache_budget_,
             TenantCache{tenants_.admit(r.id.tenant), caches_.admit(r.cache)}, kPairOverflow, 1.0);
  s.records += 1;
  s.results[r.result] += 1;
  // The age of what a lookup returned: hits and stale hits.
  if (r.result != 1) s.hit_age.observe(r.age_ns, r.id.trace_id, 0);
}

void StageAggregator::add(const CacheActionRecord& r) {
  if (r.action < 0 || r.action >= static_cast<int>(kCacheActionNames.size())) return;
  if (r.invalid_utf8) count_error(kErrorInvalidUtf8);
  CacheSeries& s =
      series(cache_series_, cache_budget_,
             TenantCache{tenants_.admit(r.tenant), caches_.admit(r.cache)}, kPairOverflow, 1.0);
  s.records += 1;
  s.any_action = true;
  s.actions[r.action] += 1;
  // A rebalance's count is the quota it set, not entries moved.
  if (r.action == kCacheActionRebalance) {
    s.quota_bytes = r.count;
  } else {
    s.entries[r.action] += r.count;
  }
}

void StageAggregator::add(const QualityRecord& r) {
  RequestSeries& s = series(request_series_, request_budget_, labels(r.id), kPairOverflow, 0.0);
  s.records += 1;
  const auto it = std::lower_bound(kEntropyBounds.begin(), kEntropyBounds.end(), r.entropy);
  s.entropy[it - kEntropyBounds.begin()] += 1;
  s.entropy_sum += r.entropy;
}

void StageAggregator::count_error(const std::string& kind, uint64_t n) { user_errors_[kind] += n; }

void StageAggregator::set_layers(
    const std::map<std::pair<uint32_t, uint32_t>, LayerTotals>& layers) {
  std::map<std::string, LayerTotals> current;
  for (const auto& [key, totals] : layers) {
    current[std::to_string(key.first) + kSeparator + std::to_string(key.second)] += totals;
  }
  layers_ = layer_folds_.fold(current);
}

uint64_t StageAggregator::folded() const {
  return tenants_.folded() + agents_.folded() + stages_.folded() + caches_.folded() +
         layer_budget_.folded();
}

void StageAggregator::collect(MetricSet& out) const {
  collect_stages(out);
  collect_requests(out);
  collect_caches(out);
  collect_layers(out);
  collect_errors(out);
  collect_budgets(out);
}

void StageAggregator::collect_budgets(MetricSet& out) const {
  const struct {
    const char* family;
    size_t series, limit;
    uint64_t folded;
  } budgets[] = {
      {"stage", stage_budget_.size(), limits_.stage, stage_budget_.folded()},
      {"request", request_budget_.size(), limits_.request, request_budget_.folded()},
      {"cache", cache_budget_.size(), limits_.cache, cache_budget_.folded()},
  };
  for (const auto& b : budgets) {
    const Labels l{{"family", b.family}};
    out.add(metric::kSeries, MetricType::Gauge,
            "Label combinations with a series of their own, per family of agent series", l,
            static_cast<double>(b.series));
    if (b.limit != SIZE_MAX) {
      out.add(metric::kSeriesLimit, MetricType::Gauge,
              "The most series a family may hold (limits: in the configuration)", l,
              static_cast<double>(b.limit));
    }
    out.add(metric::kSeriesFolded, MetricType::Counter,
            "Records (stages, requests, cache lookups and actions) that went to the family's "
            "__other__ series because it was full",
            l, static_cast<double>(b.folded));
  }
}

void StageAggregator::collect_stages(MetricSet& out) const {
  for (const auto& [key, s] : stage_series_) {
    const auto& [tenant, agent, stage] = key;
    const Labels l{{"tenant", tenant}, {"agent", agent}, {"stage", stage}};
    // Even before a stage of the key ended (its components may come first): the histogram
    // series must start with the component counters, or a first window's share (components'
    // rate over the histogram sum's) divides by a rate that missed the histogram's first value.
    out.add_histogram(metric::kStageDurationSeconds,
                      "Wall time of agent stages, per tenant, agent and stage", l,
                      s.duration.render(kDurationFirstSlot, kDurationLastSlot));
    for (size_t c = 0; c < kComponents; ++c) {
      Labels lc = l;
      lc.emplace_back("component", kComponentNames[c]);
      out.add(metric::kStageTimeSeconds, MetricType::Counter,
              "Stage wall time split into its kernel causes (the components add up to the "
              "stage time; waits on helper threads carry the helpers' causes)",
              std::move(lc), s.component_ns[c] * 1e-9, "seconds");
    }
    for (size_t c = 0; s.helpers && c < kComponents; ++c) {
      Labels lc = l;
      lc.emplace_back("component", kComponentNames[c]);
      out.add(metric::kStageHelperSeconds, MetricType::Counter,
              "Helper threads' own time in a stage (context_attach), by kernel cause: in "
              "parallel with the stage, not part of its time",
              std::move(lc), s.helper_ns[c] * 1e-9, "seconds");
    }
    out.add(metric::kStagePageCacheMisses, MetricType::Counter,
            "Pages the page cache had to read in for a stage", l,
            static_cast<double>(s.page_cache_misses));
    out.add(metric::kStageMajorFaults, MetricType::Counter,
            "Major page faults taken during a stage", l, static_cast<double>(s.major_faults));
    out.add(metric::kStageReadBytes, MetricType::Counter,
            "Bytes read through read(2), pread64(2), readv(2) and the like during a stage", l,
            static_cast<double>(s.bytes_read), "bytes");
  }
}

void StageAggregator::collect_requests(MetricSet& out) const {
  for (const auto& [key, s] : request_series_) {
    const Labels l{{"tenant", key.first}, {"agent", key.second}};
    if (s.duration.count() > 0) {
      out.add_histogram(metric::kRequestDurationSeconds,
                        "Wall time of agent requests, per tenant and agent", l,
                        s.duration.render(kDurationFirstSlot, kDurationLastSlot));
    }
    if (s.ok + s.error > 0) {
      for (const auto& [status, n] : {std::pair{"ok", s.ok}, std::pair{"error", s.error}}) {
        Labels ls = l;
        ls.emplace_back("status", status);
        out.add(metric::kRequests, MetricType::Counter, "Agent requests that ended, by outcome",
                std::move(ls), static_cast<double>(n));
      }
    }
    if (s.ttft.count() > 0) {
      out.add_histogram(metric::kTimeToFirstTokenSeconds,
                        "Time from request start to its first output token", l,
                        s.ttft.render(kDurationFirstSlot, kDurationLastSlot));
    }
    if (s.tpot.count() > 0) {
      out.add_histogram(metric::kTimePerOutputTokenSeconds,
                        "Mean time between output tokens after the first, per request", l,
                        s.tpot.render(kTokenFirst, kTokenLast));
    }
    uint64_t entropy_count = 0;
    for (uint64_t v : s.entropy) entropy_count += v;
    if (entropy_count > 0) {
      HistogramData h;
      uint64_t cumulative = 0;
      for (size_t i = 0; i < kEntropyBounds.size(); ++i) {
        cumulative += s.entropy[i];
        h.buckets.emplace_back(kEntropyBounds[i], cumulative);
      }
      h.count = entropy_count;
      h.sum = s.entropy_sum;
      out.add_histogram(metric::kOutputEntropy,
                        "Entropy of inference output distributions, as the model reports it", l,
                        std::move(h), "");
    }
  }
}

void StageAggregator::collect_caches(MetricSet& out) const {
  for (const auto& [key, s] : cache_series_) {
    const Labels l{{"tenant", key.first}, {"cache", key.second}};
    for (int r = 0; r < 3; ++r) {
      Labels lr = l;
      lr.emplace_back("result", kCacheResults[r]);
      out.add(metric::kCacheLookups, MetricType::Counter,
              "Application cache lookups, by result (hit, miss, stale)", std::move(lr),
              static_cast<double>(s.results[r]));
    }
    if (s.any_action) {
      for (size_t a = 0; a < kCacheActionNames.size(); ++a) {
        Labels la = l;
        la.emplace_back("action", kCacheActionNames[a]);
        out.add(metric::kCacheActions, MetricType::Counter,
                "Actions of the cache library (warm-ups, rebalances, invalidations, admission "
                "rejects, evictions), from its cache_action probe",
                la, static_cast<double>(s.actions[a]));
        if (static_cast<int>(a) == kCacheActionRebalance) continue;
        out.add(metric::kCacheActionEntries, MetricType::Counter,
                "Entries the cache library's actions loaded (warmup), dropped (invalidate), "
                "refused (reject) or evicted (evict)",
                std::move(la), static_cast<double>(s.entries[a]));
      }
    }
    if (s.quota_bytes) {
      out.add(metric::kCacheQuotaBytes, MetricType::Gauge,
              "The tenant's cache quota as the cache library's last rebalance set it", l,
              static_cast<double>(*s.quota_bytes));
    }
    if (s.hit_age.count() > 0) {
      out.add_histogram(metric::kCacheHitAgeSeconds,
                        "Age of the entries cache hits returned (how stale a hit was)", l,
                        s.hit_age.render(kAgeFirst, kAgeLast));
    }
  }
}

void StageAggregator::collect_layers(MetricSet& out) const {
  for (const auto& [key, t] : layers_) {
    const auto sep = key.find(kSeparator);
    const std::string layer = sep == std::string::npos ? key : key.substr(0, sep);
    const std::string batch = sep == std::string::npos ? key : key.substr(sep + 1);
    out.add_histogram(metric::kLayerDurationSeconds,
                      "Time of one model layer over one batch, by layer and batch size",
                      {{"layer", layer}, {"batch_size", batch}},
                      log2_to_buckets(t.slots, t.sum_ns, 1e-9, kLayerFirst, kLayerLast));
  }
}

void StageAggregator::collect_errors(MetricSet& out) const {
  std::map<std::string, uint64_t> totals;
  for (size_t k = 0; k < kernel_error_kinds(); ++k) totals[kernel_error_name(k)] = 0;
  totals[kErrorInvalidUtf8] = 0;
  totals[kErrorRequestNotEnded] = 0;
  for (const auto& [kind, n] : kernel_errors_) totals[kind] += n;
  for (const auto& [kind, n] : user_errors_) totals[kind] += n;
  for (const auto& [kind, n] : totals) {
    out.add(metric::kSdkErrors, MetricType::Counter,
            "Bad input from the SDK probes (out-of-order calls, bad strings), by kind",
            {{"kind", kind}}, static_cast<double>(n));
  }
}

}  // namespace tailcause::core
