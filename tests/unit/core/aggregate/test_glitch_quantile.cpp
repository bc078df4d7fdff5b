// SPDX-License-Identifier: Apache-2.0
// The sliding-window quantile: bucket geometry, accuracy against exact quantiles, expiry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/aggregate/streaming_quantile.h"

namespace tailcause::core {
namespace {

uint64_t exact(std::vector<uint64_t> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))));
  return v[rank - 1];
}

TEST(QuantileBuckets, EveryValueLiesInItsBucketWithinTheStatedError) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; i++) {
    uint64_t v = rng() >> (rng() % 64);
    if (v >= (uint64_t{1} << 48)) continue;
    size_t b = LogLinearHistogram::bucket_of(v);
    ASSERT_LT(b, LogLinearHistogram::kBuckets);
    ASSERT_LE(LogLinearHistogram::lower_bound(b), v);
    if (b + 1 < LogLinearHistogram::kBuckets) {
      ASSERT_LT(v, LogLinearHistogram::lower_bound(b + 1));
    }
    double err = std::abs(static_cast<double>(LogLinearHistogram::midpoint(b)) - double(v));
    ASSERT_LE(err, StreamingQuantile::kRelativeError * double(v)) << v;
  }
  EXPECT_EQ(LogLinearHistogram::bucket_of(5), 5u);  // small values are exact
  EXPECT_EQ(LogLinearHistogram::bucket_of(UINT64_MAX), LogLinearHistogram::kBuckets - 1);
}

TEST(QuantileAccuracy, MatchesExactQuantilesOnRandomData) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(std::log(50e6), 0.8);  // ~50 ms median
  std::uniform_int_distribution<uint64_t> uniform(1, 3'000'000'000);
  for (int dataset = 0; dataset < 2; dataset++) {
    StreamingQuantile sq(10'000'000'000, 6);
    std::vector<uint64_t> values;
    for (int i = 0; i < 20000; i++) {
      uint64_t v = dataset == 0 ? static_cast<uint64_t>(latency(rng)) : uniform(rng);
      values.push_back(v);
      sq.add(1'000'000'000 + static_cast<uint64_t>(i) * 2'000'000, v);  // all within 40 s
    }
    uint64_t now = 1'000'000'000 + 20000ull * 2'000'000;
    ASSERT_EQ(sq.count(now), values.size());
    for (double q : {0.5, 0.95, 0.99, 0.999, 1.0}) {
      double want = double(exact(values, q));
      double got = double(sq.quantile(now, q));
      EXPECT_LE(std::abs(got - want), StreamingQuantile::kRelativeError * want)
          << "dataset " << dataset << " q " << q << " exact " << want << " got " << got;
    }
  }
}

TEST(QuantileWindow, OldIntervalsLeaveTheWindow) {
  StreamingQuantile sq(1'000, 4);                        // window: 4 intervals of 1 us
  for (int i = 0; i < 100; i++) sq.add(500, 1'000'000);  // interval 0: slow
  for (int i = 0; i < 100; i++) sq.add(2'500, 1'000);    // interval 2: fast
  EXPECT_EQ(sq.count(3'999), 200u);
  EXPECT_NEAR(double(sq.quantile(3'999, 0.99)), 1e6, 1e6 / 32);
  // At 4 us interval 0 has left the window; only the fast samples remain.
  EXPECT_EQ(sq.count(4'000), 100u);
  EXPECT_NEAR(double(sq.quantile(4'000, 0.99)), 1e3, 1e3 / 32);
  // Reusing interval 0's ring slot for interval 4 clears its old counts.
  sq.add(4'100, 7);
  EXPECT_EQ(sq.count(4'100), 101u);
  EXPECT_EQ(sq.count(100'000), 0u);
  EXPECT_EQ(sq.quantile(100'000, 0.5), 0u);
}

}  // namespace
}  // namespace tailcause::core
