// SPDX-License-Identifier: Apache-2.0
// Quantiles of recent latencies in bounded memory: a ring of per-interval log-linear
// histograms covering a sliding time window. Each power of two is split into 16 linear
// sub-buckets and a quantile reports its bucket's midpoint, so the value returned is within
// kRelativeError (1/32, about 3.1%) of the exact sample at the same rank. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tailcause::core {

// One interval's counts. Values are non-negative integers (nanoseconds); values below 16 are
// exact, values above 2^48 (78 hours) are clamped into the last bucket.
class LogLinearHistogram {
 public:
  static constexpr unsigned kSubBits = 4;  // 16 sub-buckets per power of two
  static constexpr unsigned kMaxExponent = 47;
  static constexpr size_t kBuckets = (1u << kSubBits) * (kMaxExponent - kSubBits + 2);

  static size_t bucket_of(uint64_t value);
  static uint64_t lower_bound(size_t bucket);
  static uint64_t midpoint(size_t bucket);

  LogLinearHistogram() : counts_(kBuckets, 0) {}
  void add(uint64_t value);
  void clear();
  uint64_t count() const { return total_; }
  uint32_t at(size_t bucket) const { return counts_[bucket]; }

 private:
  std::vector<uint32_t> counts_;  // 720 x 4 bytes per interval
  uint64_t total_ = 0;
};

// The window is `intervals` slices of `interval_ns` each; a slice older than the window is
// reused (cleared) by the next sample that falls into its ring position. Memory is fixed:
// intervals x ~2.9 KiB.
class StreamingQuantile {
 public:
  static constexpr double kRelativeError = 1.0 / 32;

  StreamingQuantile(uint64_t interval_ns, size_t intervals);

  void add(uint64_t now_ns, uint64_t value);
  // Samples whose interval is still inside the window at `now_ns`.
  uint64_t count(uint64_t now_ns) const;
  // The q-quantile (0 < q <= 1) by nearest rank: the ceil(q*n)-th smallest sample, within
  // kRelativeError. 0 when the window is empty.
  uint64_t quantile(uint64_t now_ns, double q) const;
  uint64_t window_ns() const { return interval_ns_ * slices_.size(); }

 private:
  struct Slice {
    uint64_t epoch = 0;  // interval number + 1; 0: never used
    LogLinearHistogram hist;
  };
  bool live(const Slice& s, uint64_t now_ns) const;

  uint64_t interval_ns_;
  std::vector<Slice> slices_;
};

}  // namespace tailcause::core
