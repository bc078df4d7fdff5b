// SPDX-License-Identifier: Apache-2.0
// Aggregates decoded attribution records into the series tailcause exports: per tenant, agent
// and stage duration histograms (with trace-id exemplars) and component counters; per request
// duration, outcome, time to first token and per output token; cache lookups and hit ages;
// output entropy; layer x batch timing; SDK input errors. Labels are bounded: tenants, agents,
// free stage names, cache names and layer pairs beyond top-K fold into "__other__"; and so are
// their products: each family holds at most its SeriesLimits, the heaviest combinations (by time,
// or lookups for caches), the rest in one series whose labels are all "__other__".
// Pure: no I/O, no libbpf.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/aggregate/label_budget.h"
#include "core/aggregate/series_budget.h"
#include "core/record/metrics.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

// A log2 histogram of nanoseconds that remembers, per slot, the latest exemplar.
class ExemplarHistogram {
 public:
  static constexpr size_t kSlots = 48;  // up to 2^48 ns (78 hours)

  // `trace_id` may be empty (no exemplar); `unix_time` is when the value was observed.
  void observe(uint64_t ns, const std::string& trace_id, double unix_time);
  // Buckets for slots [first, last] (le = 2^(slot+1) ns), exemplars placed in their buckets.
  HistogramData render(size_t first, size_t last) const;
  uint64_t count() const;

 private:
  struct Slot {
    std::string trace_id;
    double value = 0;
    double time = 0;
  };
  std::array<uint64_t, kSlots> slots_{};
  uint64_t sum_ns_ = 0;
  std::array<Slot, kSlots> exemplars_{};

 public:
  // Adds another histogram's counts; per slot, the later of the two exemplars.
  ExemplarHistogram& operator+=(const ExemplarHistogram& o);
};

// Series each family may hold (the daemon passes the configuration's limits: section). Past
// them, new label combinations go to the family's overflow series.
struct SeriesLimits {
  size_t stage = SIZE_MAX;    // (tenant, agent, stage)
  size_t request = SIZE_MAX;  // (tenant, agent)
  size_t cache = SIZE_MAX;    // (tenant, cache)
};

// Cumulative layer timing read from the kernel: log2 slots of nanoseconds.
struct LayerTotals {
  std::array<uint64_t, 40> slots{};
  uint64_t sum_ns = 0;
  LayerTotals& operator+=(const LayerTotals& o);
};

class StageAggregator {
 public:
  using StageKey = std::tuple<std::string, std::string, std::string>;  // tenant, agent, stage
  using TenantAgent = std::pair<std::string, std::string>;
  using TenantCache = std::pair<std::string, std::string>;

  explicit StageAggregator(size_t top_k, SeriesLimits limits = {});

  // CLOCK_REALTIME minus CLOCK_MONOTONIC, in seconds: dates exemplars.
  void set_clock_offset(double seconds) { clock_offset_ = seconds; }

  void add(const StageRecord& r);
  void add(const RequestRecord& r);
  void add(const CacheRecord& r);
  void add(const CacheActionRecord& r);
  void add(const QualityRecord& r);

  // Bad input found in user space (invalid UTF-8, bad trace ids, requests never ended).
  void count_error(const std::string& kind, uint64_t n = 1);
  // The kernel's cumulative per-kind counts (replace the previous snapshot).
  void set_kernel_errors(const std::map<std::string, uint64_t>& totals) { kernel_errors_ = totals; }
  // Cumulative per {layer, batch size} timing (replaces the previous snapshot).
  void set_layers(const std::map<std::pair<uint32_t, uint32_t>, LayerTotals>& layers);

  void collect(MetricSet& out) const;

  uint64_t folded() const;
  // How often the families' budgets let heavier folded combinations take a lighter one's series.
  static constexpr uint64_t kRebalanceNs = 10'000'000'000;

 private:
  struct StageSeries {
    ExemplarHistogram duration;
    std::array<uint64_t, kComponents> component_ns{};  // the owner thread's (wall time)
    std::array<uint64_t, kComponents> helper_ns{};     // its helper threads' (in parallel)
    bool helpers = false;
    uint64_t page_cache_misses = 0;
    uint64_t major_faults = 0;
    uint64_t bytes_read = 0;
    uint64_t records = 0;
    StageSeries& operator+=(const StageSeries& o);
  };
  struct RequestSeries {
    ExemplarHistogram duration, ttft, tpot;
    std::array<uint64_t, 16> entropy{};  // fixed buckets, see kEntropyBounds
    double entropy_sum = 0;
    uint64_t ok = 0, error = 0;
    uint64_t records = 0;
    RequestSeries& operator+=(const RequestSeries& o);
  };
  struct CacheSeries {
    std::array<uint64_t, 3> results{};
    ExemplarHistogram hit_age;
    // The cache library's actions (none seen: no action series), the entries they moved, and
    // the quota its last rebalance set.
    bool any_action = false;
    std::array<uint64_t, kCacheActionNames.size()> actions{}, entries{};
    std::optional<uint64_t> quota_bytes;
    uint64_t records = 0;
    CacheSeries& operator+=(const CacheSeries& o);
  };

  // Folded label values for an identity (validity errors counted by the caller).
  TenantAgent labels(const Identity& id);
  void count_identity_errors(const Identity& id);
  double unix_time(uint64_t monotonic_ns) const { return monotonic_ns * 1e-9 + clock_offset_; }
  void collect_stages(MetricSet& out) const;
  void collect_requests(MetricSet& out) const;
  void collect_caches(MetricSet& out) const;
  void collect_layers(MetricSet& out) const;
  void collect_errors(MetricSet& out) const;
  void collect_budgets(MetricSet& out) const;
  // The series of `key` in one family, or its overflow series when the budget folds it.
  template <typename Key, typename Series>
  Series& series(std::map<Key, Series>& family, SeriesBudget<Key>& budget, Key key,
                 const Key& overflow, double weight);
  // Every kRebalanceNs of record time: heavier folded combinations take lighter ones' series.
  void maybe_rebalance(uint64_t now_ns);

  LabelBudget tenants_, agents_, stages_, caches_, layer_budget_;
  FoldedSeries<LayerTotals> layer_folds_;
  SeriesLimits limits_;
  SeriesBudget<StageKey> stage_budget_;
  SeriesBudget<TenantAgent> request_budget_;
  SeriesBudget<TenantCache> cache_budget_;
  uint64_t last_rebalance_ns_ = 0;
  std::map<StageKey, StageSeries> stage_series_;
  std::map<TenantAgent, RequestSeries> request_series_;
  std::map<TenantCache, CacheSeries> cache_series_;
  std::map<std::string, LayerTotals> layers_;  // folded, keyed "layer\x1fbatch"
  std::map<std::string, uint64_t> user_errors_, kernel_errors_;
  double clock_offset_ = 0;
};

}  // namespace tailcause::core
