// SPDX-License-Identifier: Apache-2.0
#include "core/record/metrics.h"

#include <stdexcept>

namespace tailcause::core {

MetricFamily& MetricSet::family(const std::string& name, MetricType type, const std::string& help,
                                const std::string& unit) {
  for (auto& f : families_) {
    if (f.name == name) {
      if (f.type != type) throw std::logic_error("metric " + name + " registered with two types");
      return f;
    }
  }
  families_.push_back(MetricFamily{name, type, help, unit, {}});
  return families_.back();
}

void MetricSet::add(const std::string& name, MetricType type, const std::string& help,
                    Labels labels, double value, const std::string& unit) {
  Sample s;
  s.labels = std::move(labels);
  s.value = value;
  family(name, type, help, unit).samples.push_back(std::move(s));
}

void MetricSet::add_histogram(const std::string& name, const std::string& help, Labels labels,
                              HistogramData data, const std::string& unit) {
  Sample s;
  s.labels = std::move(labels);
  s.histogram = std::move(data);
  family(name, MetricType::Histogram, help, unit).samples.push_back(std::move(s));
}

const Sample* MetricSet::find(const std::string& name, const Labels& want) const {
  for (const auto& f : families_) {
    if (f.name != name) continue;
    for (const auto& s : f.samples) {
      bool all = true;
      for (const auto& w : want) {
        bool found = false;
        for (const auto& l : s.labels) found = found || l == w;
        all = all && found;
      }
      if (all) return &s;
    }
  }
  return nullptr;
}

}  // namespace tailcause::core
