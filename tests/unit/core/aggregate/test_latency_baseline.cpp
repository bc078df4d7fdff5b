// SPDX-License-Identifier: Apache-2.0
// The long-horizon baseline: a log-bucketed quantile whose old samples fade by sample count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/aggregate/latency_baseline.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

// Within one bucket (2^(1/8), 9%) of `want`.
void expect_near_bucket(uint64_t got, uint64_t want) {
  EXPECT_GT(static_cast<double>(got), static_cast<double>(want) / 1.0906) << got << " vs " << want;
  EXPECT_LT(static_cast<double>(got), static_cast<double>(want) * 1.0906) << got << " vs " << want;
}

TEST(DecayingQuantile, EmptyIsZero) {
  DecayingQuantile q(100);
  EXPECT_EQ(q.count(), 0u);
  EXPECT_EQ(q.median(), 0u);
}

TEST(DecayingQuantile, MedianOfANoisyStreamIsItsCentre) {
  DecayingQuantile q(5000);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.3);
  for (int i = 0; i < 5000; i++) q.add(static_cast<uint64_t>(3.0 * ms * noise(rng)));
  EXPECT_EQ(q.count(), 5000u);
  expect_near_bucket(q.median(), 3 * ms);
  // Quantiles are ordered and the P90 sits at exp(1.2816 * 0.3) = 1.47x the median.
  EXPECT_LT(q.quantile(0.1), q.median());
  expect_near_bucket(q.quantile(0.9), static_cast<uint64_t>(3.0 * ms * std::exp(1.2816 * 0.3)));
}

TEST(DecayingQuantile, ARestoredBaselineContinuesWhereItStopped) {
  DecayingQuantile q(500);
  for (int i = 0; i < 3000; i++) q.add((i < 2000 ? 9 : 3) * ms);  // old 9 ms mostly faded
  const auto restored = DecayingQuantile::restore(q.state(), 500);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->count(), 3000u);
  EXPECT_EQ(restored->median(), q.median());
  EXPECT_EQ(restored->quantile(0.99), q.quantile(0.99));
  // It goes on learning at the same pace as the original.
  DecayingQuantile a = *restored, b = q;
  for (int i = 0; i < 400; i++) a.add(6 * ms), b.add(6 * ms);
  EXPECT_EQ(a.median(), b.median());
  // What is not a state is refused, not half-taken.
  auto bad = q.state();
  bad.weights.pop_back();
  EXPECT_FALSE(DecayingQuantile::restore(bad, 500));
  bad = q.state();
  bad.weights[3] = -1;
  EXPECT_FALSE(DecayingQuantile::restore(bad, 500));
  bad = q.state();
  bad.weights[3] = std::nan("");
  EXPECT_FALSE(DecayingQuantile::restore(bad, 500));
  EXPECT_FALSE(
      DecayingQuantile::restore({std::vector<double>(DecayingQuantile::kBuckets, 0.0), 9}, 500));
  EXPECT_FALSE(DecayingQuantile::restore(DecayingQuantile(500).state(), 500));  // empty
}

TEST(DecayingQuantile, OutliersDoNotMoveTheMedian) {
  DecayingQuantile q(1000);
  for (int i = 0; i < 1000; i++) q.add(i % 10 == 0 ? 500 * ms : 2 * ms);  // 10% at 250x
  expect_near_bucket(q.median(), 2 * ms);
}

TEST(DecayingQuantile, OldSamplesFadeAfterTheHorizon) {
  DecayingQuantile q(100);
  for (int i = 0; i < 1000; i++) q.add(1 * ms);
  // 100 samples at 8 ms carry 1 - 1/e (63%) of the weight: the median moves to them ...
  for (int i = 0; i < 100; i++) q.add(8 * ms);
  expect_near_bucket(q.median(), 8 * ms);
  // ... while 30 of them (26%) do not move it.
  DecayingQuantile r(100);
  for (int i = 0; i < 1000; i++) r.add(1 * ms);
  for (int i = 0; i < 30; i++) r.add(8 * ms);
  expect_near_bucket(r.median(), 1 * ms);
}

TEST(DecayingQuantile, WithoutDecayEverySampleCountsTheSame) {
  DecayingQuantile q(0);
  for (int i = 0; i < 600; i++) q.add(1 * ms);
  for (int i = 0; i < 400; i++) q.add(8 * ms);
  expect_near_bucket(q.median(), 1 * ms);
}

TEST(DecayingQuantile, LongStreamsStayFinite) {
  // The growing increment is rescaled long before it overflows.
  DecayingQuantile q(10);
  for (int i = 0; i < 200000; i++) q.add(4 * ms);
  expect_near_bucket(q.median(), 4 * ms);
  for (int i = 0; i < 100; i++) q.add(1 * ms);
  expect_near_bucket(q.median(), 1 * ms);
}

TEST(DecayingQuantile, ValuesOutsideTheRangeAreClamped) {
  DecayingQuantile q(0);
  q.add(0);
  q.add(1);
  EXPECT_EQ(DecayingQuantile::bucket_of(0), 0u);
  EXPECT_LE(q.median(), uint64_t{1} << (DecayingQuantile::kMinLog2 + 1));
  DecayingQuantile big(0);
  big.add(UINT64_MAX);
  EXPECT_EQ(DecayingQuantile::bucket_of(UINT64_MAX), DecayingQuantile::kBuckets - 1);
  EXPECT_GT(big.median(), uint64_t{1} << (DecayingQuantile::kMaxLog2 - 1));
}

}  // namespace
}  // namespace tailcause::core
