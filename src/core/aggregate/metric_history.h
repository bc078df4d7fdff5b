// SPDX-License-Identifier: Apache-2.0
// The daemon's short memory for the web UI and `tailcause top`: a bounded ring of what changed
// between scrapes (counter deltas, histogram bucket deltas) of a few metric families, one slot
// per tick (default 2 s, 450 slots: 15 minutes), plus hourly histogram totals for the families
// drawn per hour (TCP service pairs) and the last scrape's gauges. Series are interned once;
// memory is bounded by the slots and max_series (new series beyond it are dropped and counted).
// Pure: no I/O, no clock; the caller passes each scrape and its time. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/record/metrics.h"

namespace tailcause::core {

struct HistorySettings {
  uint64_t step_ns = 2'000'000'000;       // the tick the caller samples at (for the UI's axes)
  size_t slots = 450;                     // ticks kept
  size_t max_series = 20000;              // interned series, all families together
  size_t hours = 24;                      // hourly slots of the hourly families
  std::set<std::string> families;         // counters/histograms kept per tick (names w/o _total)
  std::set<std::string> hourly_families;  // histograms also summed per wall-clock hour
  std::set<std::string> gauge_families;   // gauges kept from the last scrape only
};

// One interned series: family, labels and, for histograms, the bucket bounds (without +Inf).
struct HistorySeries {
  uint32_t id = 0;
  std::string family;
  MetricType type = MetricType::Counter;
  Labels labels;
  std::vector<double> bounds;
  // The label's value, "" when absent.
  const std::string& label(const std::string& name) const;
};

// What changed in one series over one tick (or an hour): a counter's increase, or a histogram's
// per-bucket (not cumulative) counts, the last one +Inf, with their sum.
struct HistoryDelta {
  uint32_t id = 0;
  double value = 0;  // counters; histograms: the sum of the observations
  // Histograms: bounds.size() + 1 counts, the last +Inf; a tick's delta stops at the last
  // bucket that counted (the rest are 0), hours and merged() have them all.
  std::vector<uint64_t> buckets;
  uint64_t count() const;
};

struct HistoryTick {
  int64_t unix_ns = 0;               // when the scrape was taken (the end of the interval)
  std::vector<HistoryDelta> deltas;  // sorted by id, only series that changed
  const HistoryDelta* find(uint32_t id) const;
};

struct HistoryHour {
  int64_t start_unix_s = 0;  // a multiple of 3600
  std::map<uint32_t, HistoryDelta> deltas;
};

class MetricHistory {
 public:
  explicit MetricHistory(HistorySettings settings);

  // One scrape at `unix_ns`: the deltas against the previous one go into a new slot (the oldest
  // slot is dropped when full). The first scrape of a series only sets its baseline; a counter
  // or histogram that went down (a family restarted) counts from zero again.
  void add(const MetricSet& scrape, int64_t unix_ns);

  const HistorySettings& settings() const { return settings_; }
  const std::deque<HistoryTick>& ticks() const { return ticks_; }
  const std::deque<HistoryHour>& hours() const { return hours_; }
  // Series of `family` (by id); nullptr for an unknown id.
  std::vector<const HistorySeries*> series(const std::string& family) const;
  const HistorySeries* series(uint32_t id) const;
  // The last scrape's samples of a gauge family in gauge_families.
  const std::vector<Sample>& gauges(const std::string& family) const;
  uint64_t dropped_series() const { return dropped_series_; }
  size_t series_count() const { return series_.size(); }

  // The sum of `id`'s deltas over the ticks with from_ns < unix_ns <= to_ns.
  HistoryDelta merged(uint32_t id, int64_t from_ns, int64_t to_ns) const;

 private:
  struct Baseline {
    double value = 0;
    std::vector<uint64_t> cumulative;  // histograms: cumulative counts, +Inf last
    int64_t seen_ns = 0;               // the last scrape that had it
  };
  uint32_t intern(const MetricFamily& family, const Sample& sample);
  // One sample's delta against its series' baseline, which it then replaces; false when there is
  // none to keep (a dropped series, its first scrape, or nothing new).
  bool delta_of(const MetricFamily& family, const Sample& sample, int64_t unix_ns, HistoryDelta& d);
  // A histogram's bucket and sum deltas; false when it counted nothing new.
  static bool histogram_delta(const HistogramData& h, HistorySeries& s, Baseline& base,
                              HistoryDelta& d);
  void add_to_hour(int64_t unix_ns, const HistoryDelta& d);
  void forget_unused(int64_t now_ns);

  HistorySettings settings_;
  std::deque<HistoryTick> ticks_;
  std::deque<HistoryHour> hours_;
  std::unordered_map<std::string, uint32_t> ids_;  // family + labels -> id
  std::unordered_map<uint32_t, HistorySeries> series_;
  std::unordered_map<uint32_t, Baseline> baselines_;
  std::map<std::string, std::vector<Sample>> gauges_;
  uint32_t next_id_ = 1;
  uint64_t dropped_series_ = 0;
  size_t adds_ = 0;
};

// The q-quantile (0 < q <= 1) of per-bucket counts (the last one +Inf) with upper bounds
// `bounds`, interpolated linearly within the bucket as Prometheus' histogram_quantile() does;
// the +Inf bucket answers the last finite bound. 0 when empty.
double histogram_quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& buckets,
                          double q);

}  // namespace tailcause::core
