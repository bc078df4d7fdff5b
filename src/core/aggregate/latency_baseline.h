// SPDX-License-Identifier: Apache-2.0
// A (tenant, stage)'s normal latency, learned over a long horizon: a log-bucketed histogram
// whose old samples fade slowly (exponential decay by sample count), so its median is robust
// to outliers and moves only after many samples. The incident detector stops feeding it while a
// shift is under way, so a fault cannot drag its own yardstick along. Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tailcause::core {

class DecayingQuantile {
 public:
  // 8 buckets per power of two (9% wide) from 1 us to 2^40 ns (18 min); values outside are
  // clamped into the first or last bucket.
  static constexpr int kPerOctave = 8;
  static constexpr int kMinLog2 = 10;
  static constexpr int kMaxLog2 = 40;
  static constexpr size_t kBuckets = static_cast<size_t>((kMaxLog2 - kMinLog2) * kPerOctave);

  // `horizon`: a sample's weight falls by 1/e after this many newer ones; 0: never decays
  // (every sample counts the same, e.g. an incident's ratios).
  explicit DecayingQuantile(uint64_t horizon = 0);

  void add(uint64_t value);
  // Samples added (not decayed): how much there is to trust.
  uint64_t count() const { return count_; }
  // The decayed distribution's q-quantile (0 < q < 1), interpolated in log space within its
  // bucket; 0 when empty.
  uint64_t quantile(double q) const;
  uint64_t median() const { return quantile(0.5); }

  static size_t bucket_of(uint64_t value);

  // What it learned, to keep across restarts: the bucket weights scaled so that the newest
  // sample weighs 1, and the samples added.
  struct State {
    std::vector<double> weights;  // kBuckets of them
    uint64_t count = 0;
  };
  State state() const;
  // A baseline of `horizon` that continues from `state`; nullopt when the state is not one
  // (a bucket count of another build, weights negative, not finite, or all zero).
  static std::optional<DecayingQuantile> restore(const State& state, uint64_t horizon);

 private:
  std::array<double, kBuckets> weight_{};
  double total_ = 0;
  double increment_ = 1;  // grows instead of shrinking every bucket: same ratios, O(1) per add
  double growth_ = 1;     // increment_ factor per sample
  uint64_t count_ = 0;
};

}  // namespace tailcause::core
