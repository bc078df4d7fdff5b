// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "core/aggregate/histogram_conversion.h"

using namespace tailcause::core;

TEST(HistogramConversion, Log2SlotsBecomeCumulativeBucketsInSeconds) {
  // 3 values in [1,2) us... expressed in ns slots: slot 10 = [1024, 2048) ns.
  std::array<uint64_t, 40> slots{};
  slots[0] = 1;   // a zero
  slots[10] = 3;  // ~1-2 us
  slots[20] = 2;  // ~1-2 ms
  slots[39] = 1;  // beyond the last exported bucket: only in +Inf
  auto h = log2_to_buckets(slots, 5000, 1e-9, 9, 30);
  ASSERT_EQ(h.buckets.size(), 22u);
  EXPECT_DOUBLE_EQ(h.buckets.front().first, 1024e-9);  // le of slot 9 = 2^10 ns
  EXPECT_EQ(h.buckets.front().second, 1u);             // the zero is below it
  EXPECT_DOUBLE_EQ(h.buckets[1].first, 2048e-9);
  EXPECT_EQ(h.buckets[1].second, 4u);
  EXPECT_EQ(h.buckets.back().second, 6u);
  EXPECT_EQ(h.count, 7u);
  EXPECT_DOUBLE_EQ(h.sum, 5000e-9);
  for (size_t i = 1; i < h.buckets.size(); ++i) {
    EXPECT_GT(h.buckets[i].first, h.buckets[i - 1].first);
    EXPECT_GE(h.buckets[i].second, h.buckets[i - 1].second);
  }
}

TEST(HistogramConversion, EveryValueOfASlotIsBelowItsBound) {
  // The largest value of slot i is 2^(i+1)-1 units, which must be <= le.
  for (int i = 0; i < 39; ++i) {
    std::array<uint64_t, 40> slots{};
    slots[i] = 1;
    auto h = log2_to_buckets(slots, 0, 1.0, 0, 39);
    const double max_value = std::ldexp(1.0, i + 1) - 1;
    EXPECT_LE(max_value, h.buckets[i].first);
    EXPECT_EQ(h.buckets[i].second, 1u);
    if (i > 0) {
      EXPECT_EQ(h.buckets[i - 1].second, 0u);
    }
  }
}

TEST(HistogramConversion, LinearSlotsCountExactValuesAndCapTheLast) {
  std::array<uint64_t, 5> slots{4, 0, 2, 1, 3};  // last slot: values >= 4
  auto h = linear_to_buckets(slots, 25);
  ASSERT_EQ(h.buckets.size(), 4u);
  EXPECT_EQ(h.buckets[0], (std::pair<double, uint64_t>{0, 4}));
  EXPECT_EQ(h.buckets[2], (std::pair<double, uint64_t>{2, 6}));
  EXPECT_EQ(h.buckets[3], (std::pair<double, uint64_t>{3, 7}));
  EXPECT_EQ(h.count, 10u);
  EXPECT_DOUBLE_EQ(h.sum, 25);
}

TEST(HistogramConversion, AddSlotsMergesPerCpuCopies) {
  std::array<uint64_t, 3> a{1, 2, 3};
  std::array<uint64_t, 3> b{10, 20, 30};
  add_slots(a, b);
  EXPECT_EQ(a, (std::array<uint64_t, 3>{11, 22, 33}));
}
