// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/histogram_conversion.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tailcause::core {

void add_slots(std::span<uint64_t> into, std::span<const uint64_t> from) {
  const size_t n = std::min(into.size(), from.size());
  for (size_t i = 0; i < n; ++i) into[i] += from[i];
}

HistogramData log2_to_buckets(std::span<const uint64_t> slots, uint64_t sum, double unit_seconds,
                              size_t first, size_t last) {
  HistogramData h;
  last = std::min(last, slots.size() - 1);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    cumulative += slots[i];
    if (i >= first && i <= last) {
      h.buckets.emplace_back(std::ldexp(unit_seconds, static_cast<int>(i + 1)), cumulative);
    }
  }
  h.count = cumulative;
  h.sum = static_cast<double>(sum) * unit_seconds;
  return h;
}

size_t log2_slot(uint64_t ns, size_t slots) {
  const size_t s = ns > 1 ? static_cast<size_t>(std::bit_width(ns) - 1) : 0;
  return std::min(s, slots - 1);
}

size_t duration_bucket(uint64_t ns) {
  const size_t s = log2_slot(ns, 64);
  if (s < kDurationFirstSlot) return 0;
  return std::min(s, kDurationLastSlot + 1) - kDurationFirstSlot;
}

std::vector<double> duration_bounds() {
  // As log2_to_buckets() labels them: le = 2^(slot+1) ns.
  std::vector<double> b;
  for (size_t s = kDurationFirstSlot; s <= kDurationLastSlot; ++s)
    b.push_back(std::ldexp(1e-9, static_cast<int>(s + 1)));
  return b;
}

HistogramData linear_to_buckets(std::span<const uint64_t> slots, uint64_t sum) {
  HistogramData h;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    cumulative += slots[i];
    if (i + 1 < slots.size()) h.buckets.emplace_back(static_cast<double>(i), cumulative);
  }
  h.count = cumulative;
  h.sum = static_cast<double>(sum);
  return h;
}

}  // namespace tailcause::core
