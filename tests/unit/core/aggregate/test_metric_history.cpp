// SPDX-License-Identifier: Apache-2.0
// The web UI's history ring: deltas per tick, resets, the ring's bound, hourly sums, the bound
// on series, forgetting vanished series, and the histogram quantile.
#include <gtest/gtest.h>

#include "core/aggregate/metric_history.h"

namespace tailcause::core {
namespace {

constexpr int64_t kS = 1'000'000'000;

HistorySettings settings(size_t slots = 5) {
  HistorySettings s;
  s.slots = slots;
  s.families = {"c", "h"};
  s.hourly_families = {"h"};
  s.gauge_families = {"g"};
  return s;
}

// A scrape with counter c{t=a} = value and histogram h (bounds 1, 2, 4) with cumulative counts.
MetricSet scrape(double value, std::vector<uint64_t> cum, double sum = 0) {
  MetricSet m;
  m.add("c", MetricType::Counter, "", {{"t", "a"}}, value);
  HistogramData h;
  h.buckets = {{1, cum[0]}, {2, cum[1]}, {4, cum[2]}};
  h.count = cum[3];
  h.sum = sum;
  m.add_histogram("h", "", {{"t", "a"}}, h);
  m.add("g", MetricType::Gauge, "", {{"t", "a"}}, value * 2);
  m.add("ignored", MetricType::Counter, "", {}, value);
  return m;
}

TEST(MetricHistory, FirstScrapeIsABaselineThenDeltasPerTick) {
  MetricHistory h(settings());
  h.add(scrape(10, {1, 2, 3, 4}), 1 * kS);
  ASSERT_EQ(h.ticks().size(), 1u);
  EXPECT_TRUE(h.ticks()[0].deltas.empty());
  h.add(scrape(15, {1, 4, 6, 7}, 3.5), 2 * kS);
  const auto& t = h.ticks().back();
  ASSERT_EQ(t.deltas.size(), 2u);
  const auto c = h.series("c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->label("t"), "a");
  EXPECT_DOUBLE_EQ(t.find(c[0]->id)->value, 5);
  const auto hs = h.series("h");
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0]->bounds, (std::vector<double>{1, 2, 4}));
  // cumulative deltas 0, 2, 3, 3 -> per bucket 0, 2, 1, 0
  EXPECT_EQ(t.find(hs[0]->id)->buckets,
            (std::vector<uint64_t>{0, 2, 1}));  // up to the last that counted
  EXPECT_TRUE(h.series("ignored").empty());
  ASSERT_EQ(h.gauges("g").size(), 1u);
  EXPECT_DOUBLE_EQ(h.gauges("g")[0].value, 30);
}

TEST(MetricHistory, UnchangedSeriesTakeNoSpaceAndAResetCountsFromZero) {
  MetricHistory h(settings());
  h.add(scrape(10, {1, 2, 3, 4}), 1 * kS);
  h.add(scrape(10, {1, 2, 3, 4}), 2 * kS);
  EXPECT_TRUE(h.ticks().back().deltas.empty());
  h.add(scrape(3, {0, 1, 1, 1}), 3 * kS);  // a restarted family
  const auto& t = h.ticks().back();
  EXPECT_DOUBLE_EQ(t.find(h.series("c")[0]->id)->value, 3);
  EXPECT_EQ(t.find(h.series("h")[0]->id)->buckets, (std::vector<uint64_t>{0, 1}));
}

TEST(MetricHistory, TheRingKeepsItsLastSlotsAndMergesARange) {
  MetricHistory h(settings(3));
  for (int i = 0; i <= 10; ++i) h.add(scrape(i * 2.0, {0, 0, uint64_t(i), uint64_t(i)}), i * kS);
  ASSERT_EQ(h.ticks().size(), 3u);
  EXPECT_EQ(h.ticks().front().unix_ns, 8 * kS);
  const uint32_t c = h.series("c")[0]->id, hist = h.series("h")[0]->id;
  EXPECT_DOUBLE_EQ(h.merged(c, 0, 100 * kS).value, 6);      // three ticks of +2
  EXPECT_DOUBLE_EQ(h.merged(c, 9 * kS, 10 * kS).value, 2);  // (9, 10]
  EXPECT_EQ(h.merged(hist, 0, 100 * kS).buckets, (std::vector<uint64_t>{0, 0, 3, 0}));
  EXPECT_EQ(h.merged(hist, 20 * kS, 30 * kS).count(), 0u);
}

TEST(MetricHistory, HourlyFamiliesSumPerWallClockHour) {
  MetricHistory h(settings());
  const int64_t hour = 3600 * kS;
  h.add(scrape(0, {0, 0, 0, 0}), 10 * hour + 1 * kS);
  h.add(scrape(0, {1, 1, 1, 1}), 10 * hour + 2 * kS);
  h.add(scrape(0, {2, 2, 2, 2}), 10 * hour + 3 * kS);
  h.add(scrape(0, {2, 2, 2, 5}), 11 * hour + 1 * kS);
  ASSERT_EQ(h.hours().size(), 2u);
  EXPECT_EQ(h.hours()[0].start_unix_s, 10 * 3600);
  EXPECT_EQ(h.hours()[0].deltas.begin()->second.buckets, (std::vector<uint64_t>{2, 0, 0, 0}));
  EXPECT_EQ(h.hours()[1].deltas.begin()->second.buckets, (std::vector<uint64_t>{0, 0, 0, 3}));
}

TEST(MetricHistory, SeriesBeyondTheBoundAreDroppedAndCounted) {
  HistorySettings s = settings();
  s.max_series = 3;
  MetricHistory h(s);
  MetricSet m;
  for (int i = 0; i < 10; ++i) m.add("c", MetricType::Counter, "", {{"t", std::to_string(i)}}, i);
  h.add(m, kS);
  EXPECT_EQ(h.series_count(), 3u);
  EXPECT_EQ(h.dropped_series(), 7u);
}

TEST(MetricHistory, VanishedSeriesAreForgottenOnceOutOfTheRing) {
  MetricHistory h(settings(2));
  MetricSet first;
  first.add("c", MetricType::Counter, "", {{"t", "gone"}}, 1);
  h.add(first, 1 * kS);
  first.families()[0].samples[0].value = 2;
  h.add(first, 2 * kS);
  EXPECT_EQ(h.series_count(), 1u);
  MetricSet other;
  other.add("c", MetricType::Counter, "", {{"t", "new"}}, 1);
  for (int i = 3; i < 8; ++i) h.add(other, i * kS);
  ASSERT_EQ(h.series("c").size(), 1u);
  EXPECT_EQ(h.series("c")[0]->label("t"), "new");
}

TEST(HistogramQuantile, InterpolatesWithinTheBucketAsPrometheusDoes) {
  const std::vector<double> bounds{1, 2, 4};
  EXPECT_DOUBLE_EQ(histogram_quantile(bounds, {0, 0, 0, 0}, 0.99), 0);
  EXPECT_DOUBLE_EQ(histogram_quantile(bounds, {0, 10, 0, 0}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(histogram_quantile(bounds, {10, 0, 0, 0}, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(histogram_quantile(bounds, {90, 0, 10, 0}, 0.99), 3.8);
  EXPECT_DOUBLE_EQ(histogram_quantile(bounds, {0, 0, 0, 5}, 0.5), 4);  // +Inf: last bound
}

}  // namespace
}  // namespace tailcause::core
