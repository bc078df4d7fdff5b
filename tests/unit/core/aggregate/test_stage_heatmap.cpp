// SPDX-License-Identifier: Apache-2.0
// The stage heatmap: stages by the second they ended and the duration bucket of their wall
// time, the buckets the exported histogram has; whole-second columns, the window, the bounds.
#include <gtest/gtest.h>

#include "core/aggregate/histogram_conversion.h"
#include "core/aggregate/stage_heatmap.h"

namespace tailcause::core {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

uint64_t count_at(const std::vector<StageHeatmap::Cell>& cells, size_t column, size_t bucket) {
  for (const auto& c : cells)
    if (c.column == column && c.bucket == bucket) return c.count;
  return 0;
}

TEST(DurationBuckets, AreTheExportedHistogramsBuckets) {
  // Slot s holds [2^s, 2^(s+1)) ns; the first bucket also holds everything shorter.
  EXPECT_EQ(duration_bucket(0), 0u);
  EXPECT_EQ(duration_bucket((1ull << 15) - 1), 0u);
  EXPECT_EQ(duration_bucket(1ull << 15), 1u);
  EXPECT_EQ(duration_bucket((1ull << 28) - 1), 13u);
  EXPECT_EQ(duration_bucket(1ull << 28), 14u);
  const size_t inf = kDurationLastSlot - kDurationFirstSlot + 1;
  EXPECT_EQ(duration_bucket(1ull << 37), inf);
  EXPECT_EQ(duration_bucket(~0ull), inf);

  // The bounds are the labels log2_to_buckets() gives the same slots.
  std::vector<uint64_t> slots(48, 0);
  const HistogramData h = log2_to_buckets(slots, 0, 1e-9, kDurationFirstSlot, kDurationLastSlot);
  const std::vector<double> bounds = duration_bounds();
  ASSERT_EQ(bounds.size(), h.buckets.size());
  for (size_t i = 0; i < bounds.size(); ++i) EXPECT_EQ(bounds[i], h.buckets[i].first) << i;
  // A wall time in seconds sits on the same side of a bound as its nanoseconds do.
  for (size_t b = 1; b < bounds.size(); ++b) {
    const uint64_t lo = 1ull << (kDurationFirstSlot + b);
    EXPECT_GE(static_cast<double>(lo) * 1e-9, bounds[b - 1]);
    EXPECT_LT(static_cast<double>(lo - 1) * 1e-9, bounds[b - 1]);
  }
}

TEST(StageHeatmap, ColumnsAreWholeSecondsOfEndTime) {
  StageHeatmap h;
  h.add("ta", "generation", kT0 - 1, 300'000'000);       // the second before
  h.add("ta", "generation", kT0, 300'000'000);           // column 0's first nanosecond
  h.add("ta", "generation", kT0 + 2 * kS - 1, 1 << 28);  // column 0's last
  h.add("ta", "generation", kT0 + 2 * kS, (1 << 28) - 1);
  h.add("tb", "generation", kT0 + 3 * kS, 1 << 28);
  h.add("ta", "retrieval", kT0 + 3 * kS, 1 << 28);
  const auto cells = h.cells("generation", std::nullopt, kT0 / kS, 2, 2);
  EXPECT_EQ(count_at(cells, 0, 14), 2u) << "300 ms and 2^28 ns share [2^28, 2^29) ns";
  EXPECT_EQ(count_at(cells, 1, 13), 1u) << "2^28 - 1 ns is one bucket lower";
  EXPECT_EQ(count_at(cells, 1, 14), 1u) << "tenant tb";
  EXPECT_EQ(cells.size(), 3u) << "nothing from before the first column or of another stage";
  const auto ta = h.cells("generation", "ta", kT0 / kS, 2, 2);
  EXPECT_EQ(count_at(ta, 1, 14), 0u);
  EXPECT_EQ(count_at(ta, 0, 14), 2u);
  const auto before = h.cells("generation", std::nullopt, kT0 / kS - 1, 1, 1);
  EXPECT_EQ(count_at(before, 0, 14), 1u);
}

TEST(StageHeatmap, KeepsTheWindowAndTakesLateStagesInOrder) {
  StageHeatmap h({.window_s = 10});
  h.add("ta", "g", kT0 + 5 * kS, 1000);
  h.add("ta", "g", kT0 + 2 * kS, 1000);  // late, still inside the window: inserted in place
  h.add("ta", "g", kT0 + 3 * kS, 1000);
  auto cells = h.cells("g", std::nullopt, kT0 / kS, 1, 10);
  EXPECT_EQ(count_at(cells, 2, 0) + count_at(cells, 3, 0) + count_at(cells, 5, 0), 3u);
  h.add("ta", "g", kT0 + 13 * kS, 1000);  // the window now starts after second 3
  cells = h.cells("g", std::nullopt, kT0 / kS, 1, 20);
  EXPECT_EQ(count_at(cells, 2, 0) + count_at(cells, 3, 0), 0u);
  EXPECT_EQ(count_at(cells, 5, 0), 1u);
  h.add("ta", "g", kT0 + 1 * kS, 1000);  // older than the window
  EXPECT_EQ(h.dropped(), 1u);
}

TEST(StageHeatmap, KeysAndEntriesAreBounded) {
  StageHeatmap h({.window_s = 100, .max_keys = 2, .max_entries = 3});
  h.add("a", "g", kT0, 1000);
  h.add("b", "g", kT0, 1000);
  h.add("c", "g", kT0, 1000);  // a third key
  EXPECT_EQ(h.dropped(), 1u);
  h.add("a", "g", kT0, 1000);  // an existing entry: counted, not a new one
  h.add("a", "g", kT0 + kS, 1000);
  h.add("a", "g", kT0 + 2 * kS, 1000);  // a fourth entry
  EXPECT_EQ(h.dropped(), 2u);
  const auto cells = h.cells("g", "a", kT0 / kS, 1, 3);
  EXPECT_EQ(count_at(cells, 0, 0), 2u);
  EXPECT_EQ(count_at(cells, 1, 0), 1u);
  EXPECT_EQ(count_at(cells, 2, 0), 0u);
}

}  // namespace
}  // namespace tailcause::core
