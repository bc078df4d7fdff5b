// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/latency_baseline.h"

#include <algorithm>
#include <cmath>

namespace tailcause::core {

namespace {
// Rescale before the growing increment can overflow a double (1e300) or lose the old weights
// entirely; dividing every weight by the same factor keeps the quantiles.
constexpr double kRescaleAt = 1e200;
}  // namespace

DecayingQuantile::DecayingQuantile(uint64_t horizon)
    : growth_(horizon ? std::exp(1.0 / static_cast<double>(horizon)) : 1.0) {}

size_t DecayingQuantile::bucket_of(uint64_t value) {
  if (value <= (uint64_t{1} << kMinLog2)) return 0;
  const double pos = (std::log2(static_cast<double>(value)) - kMinLog2) * kPerOctave;
  if (pos >= static_cast<double>(kBuckets - 1)) return kBuckets - 1;
  return static_cast<size_t>(pos);
}

void DecayingQuantile::add(uint64_t value) {
  count_++;
  if (count_ > 1) increment_ *= growth_;
  if (increment_ > kRescaleAt) {
    for (double& w : weight_) w /= increment_;
    total_ /= increment_;
    increment_ = 1;
  }
  weight_[bucket_of(value)] += increment_;
  total_ += increment_;
}

uint64_t DecayingQuantile::quantile(double q) const {
  if (total_ <= 0) return 0;
  const double target = q * total_;
  double below = 0;
  for (size_t b = 0; b < kBuckets; b++) {
    const double w = weight_[b];
    if (w > 0 && below + w >= target) {
      const double frac = std::clamp((target - below) / w, 0.0, 1.0);
      const double log2v = kMinLog2 + (static_cast<double>(b) + frac) / kPerOctave;
      return static_cast<uint64_t>(std::exp2(log2v));
    }
    below += w;
  }
  return static_cast<uint64_t>(std::exp2(kMaxLog2));
}

DecayingQuantile::State DecayingQuantile::state() const {
  State s;
  s.count = count_;
  s.weights.reserve(kBuckets);
  for (double w : weight_) s.weights.push_back(w / increment_);
  return s;
}

std::optional<DecayingQuantile> DecayingQuantile::restore(const State& state, uint64_t horizon) {
  if (state.weights.size() != kBuckets || state.count == 0) return std::nullopt;
  DecayingQuantile q(horizon);
  for (size_t b = 0; b < kBuckets; b++) {
    const double w = state.weights[b];
    if (!std::isfinite(w) || w < 0 || w > kRescaleAt) return std::nullopt;
    q.weight_[b] = w;
    q.total_ += w;
  }
  if (!(q.total_ > 0) || !std::isfinite(q.total_)) return std::nullopt;
  q.count_ = state.count;
  return q;
}

}  // namespace tailcause::core
