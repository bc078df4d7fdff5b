// SPDX-License-Identifier: Apache-2.0
#include "latency_stats.h"

#include <algorithm>
#include <cmath>

namespace rag {

void LatencySamples::add(double seconds) {
  ++count_;
  sum_ += seconds;
  max_ = std::max(max_, seconds);
  if (samples_.size() < kMaxSamples) {
    samples_.push_back(seconds);
    return;
  }
  rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;  // xorshift: reservoir slot
  uint64_t slot = rng_ % count_;
  if (slot < kMaxSamples) samples_[slot] = seconds;
}

nlohmann::json LatencySamples::summary() const {
  std::vector<double> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentile.
  auto pct = [&](double p) {
    if (sorted.empty()) return 0.0;
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
  };
  return {{"count", count_},
          {"errors", errors_},
          {"p50_seconds", pct(0.50)},
          {"p99_seconds", pct(0.99)},
          {"max_seconds", max_},
          {"mean_seconds", count_ ? sum_ / static_cast<double>(count_) : 0.0}};
}

void StageStats::add(const std::string& name, double seconds) {
  std::lock_guard lock(mu_);
  series_[name].add(seconds);
}

void StageStats::add_error(const std::string& name) {
  std::lock_guard lock(mu_);
  series_[name].add_error();
}

nlohmann::json StageStats::summary() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, s] : series_) out[name] = s.summary();
  return out;
}

}  // namespace rag
