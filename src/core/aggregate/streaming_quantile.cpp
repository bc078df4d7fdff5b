// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/streaming_quantile.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace tailcause::core {

namespace {
constexpr uint64_t kSub = 1u << LogLinearHistogram::kSubBits;
}

size_t LogLinearHistogram::bucket_of(uint64_t value) {
  if (value < kSub) return static_cast<size_t>(value);
  unsigned exponent = 63 - static_cast<unsigned>(std::countl_zero(value));
  if (exponent > kMaxExponent) return kBuckets - 1;
  uint64_t sub = (value >> (exponent - kSubBits)) & (kSub - 1);
  return kSub + (exponent - kSubBits) * kSub + sub;
}

uint64_t LogLinearHistogram::lower_bound(size_t bucket) {
  if (bucket < kSub) return bucket;
  size_t rest = bucket - kSub;
  unsigned shift = static_cast<unsigned>(rest / kSub);
  return (kSub + rest % kSub) << shift;
}

uint64_t LogLinearHistogram::midpoint(size_t bucket) {
  if (bucket < kSub) return bucket;
  unsigned shift = static_cast<unsigned>((bucket - kSub) / kSub);
  // Width 2^shift; the midpoint keeps the error within half a width either way.
  return lower_bound(bucket) + ((uint64_t{1} << shift) >> 1);
}

void LogLinearHistogram::add(uint64_t value) {
  uint32_t& c = counts_[bucket_of(value)];
  if (c != UINT32_MAX) c++;  // saturate rather than wrap
  total_++;
}

void LogLinearHistogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
}

StreamingQuantile::StreamingQuantile(uint64_t interval_ns, size_t intervals)
    : interval_ns_(interval_ns), slices_(intervals) {
  if (interval_ns == 0 || intervals == 0) {
    throw std::invalid_argument("StreamingQuantile: interval and count must be positive");
  }
}

bool StreamingQuantile::live(const Slice& s, uint64_t now_ns) const {
  if (s.epoch == 0) return false;
  uint64_t current = now_ns / interval_ns_ + 1;
  // A slice from the future (clock went back) counts as live rather than being lost.
  return s.epoch + slices_.size() > current;
}

void StreamingQuantile::add(uint64_t now_ns, uint64_t value) {
  uint64_t epoch = now_ns / interval_ns_ + 1;
  Slice& s = slices_[epoch % slices_.size()];
  if (s.epoch != epoch) {
    s.hist.clear();
    s.epoch = epoch;
  }
  s.hist.add(value);
}

uint64_t StreamingQuantile::count(uint64_t now_ns) const {
  uint64_t n = 0;
  for (const auto& s : slices_) {
    if (live(s, now_ns)) n += s.hist.count();
  }
  return n;
}

uint64_t StreamingQuantile::quantile(uint64_t now_ns, double q) const {
  uint64_t n = count(now_ns);
  if (n == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))));
  uint64_t seen = 0;
  for (size_t b = 0; b < LogLinearHistogram::kBuckets; b++) {
    for (const auto& s : slices_) {
      if (live(s, now_ns)) seen += s.hist.at(b);
    }
    if (seen >= rank) return LogLinearHistogram::midpoint(b);
  }
  return LogLinearHistogram::midpoint(LogLinearHistogram::kBuckets - 1);
}

}  // namespace tailcause::core
