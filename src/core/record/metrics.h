// SPDX-License-Identifier: Apache-2.0
// The metric model every probe family fills on a scrape and the renderers print.
// Pure data: no I/O, no libbpf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tailcause::core {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { Counter, Gauge, Histogram };

// An exemplar links a sample to a trace (OpenMetrics only).
struct Exemplar {
  Labels labels;  // e.g. {{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"}}
  double value = 0;
  std::optional<double> timestamp;  // seconds since the epoch
};

// A cumulative histogram as Prometheus sees it: bucket upper bounds ascending,
// each count includes all smaller buckets; the +Inf bucket is `count`.
struct HistogramData {
  std::vector<std::pair<double, uint64_t>> buckets;  // (le, cumulative count)
  uint64_t count = 0;
  double sum = 0;
  // Optional exemplar per bucket index (size == buckets.size() + 1 for +Inf), may be empty.
  std::vector<std::optional<Exemplar>> exemplars;
};

struct Sample {
  Labels labels;
  double value = 0;                  // counters and gauges
  HistogramData histogram;           // histograms
  std::optional<Exemplar> exemplar;  // counters only
};

// A family is named without the `_total` suffix for counters; renderers add it.
struct MetricFamily {
  std::string name;
  MetricType type = MetricType::Gauge;
  std::string help;
  std::string unit;  // base unit suffix of `name` ("seconds", "bytes") or empty
  std::vector<Sample> samples;
};

// What a scrape collects: families in the order they were first added.
class MetricSet {
 public:
  // Returns the family with this name, creating it on first use. The reference is valid
  // until the next call that creates a family.
  MetricFamily& family(const std::string& name, MetricType type, const std::string& help,
                       const std::string& unit = "");

  void add(const std::string& name, MetricType type, const std::string& help, Labels labels,
           double value, const std::string& unit = "");
  void add_histogram(const std::string& name, const std::string& help, Labels labels,
                     HistogramData data, const std::string& unit = "seconds");

  // The first sample of family `name` whose labels include all of `want`; nullptr if none.
  const Sample* find(const std::string& name, const Labels& want) const;

  const std::vector<MetricFamily>& families() const { return families_; }
  std::vector<MetricFamily>& families() { return families_; }

 private:
  std::vector<MetricFamily> families_;
};

}  // namespace tailcause::core
