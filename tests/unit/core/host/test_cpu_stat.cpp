// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/host/cpu_stat.h"

using namespace tailcause::core;

// As a 6.x kernel prints it for a cgroup with the cpu controller enabled.
constexpr const char* kV2CpuStat =
    "usage_usec 2350000\n"
    "user_usec 2300000\n"
    "system_usec 50000\n"
    "core_sched.force_idle_usec 0\n"
    "nr_periods 250\n"
    "nr_throttled 231\n"
    "throttled_usec 21045000\n"
    "nr_bursts 0\n"
    "burst_usec 0\n";

constexpr const char* kV1CpuStat =
    "nr_periods 27\n"
    "nr_throttled 25\n"
    "throttled_time 2241623417\n"
    "nr_bursts 0\n"
    "burst_time 0\n";

TEST(CpuStat, ParsesV2InNanoseconds) {
  const auto s = parse_cpu_stat(kV2CpuStat);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nr_periods, 250u);
  EXPECT_EQ(s->nr_throttled, 231u);
  EXPECT_EQ(s->throttled_ns, 21045000000u);
  EXPECT_EQ(s->usage_ns, 2350000000u);
}

TEST(CpuStat, ParsesV1ThrottledTimeAsNanoseconds) {
  const auto s = parse_cpu_stat(kV1CpuStat);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nr_periods, 27u);
  EXPECT_EQ(s->nr_throttled, 25u);
  EXPECT_EQ(s->throttled_ns, 2241623417u);
  EXPECT_EQ(s->usage_ns, 0u);  // v1 cpu.stat has no usage
}

TEST(CpuStat, V2WithoutCpuControllerHasNoBandwidthData) {
  // Only the always-present core stats: not a cgroup with bandwidth control.
  EXPECT_FALSE(parse_cpu_stat("usage_usec 100\nuser_usec 60\nsystem_usec 40\n"));
}

TEST(CpuStat, EmptyOrBlankFileIsNoData) {
  EXPECT_FALSE(parse_cpu_stat(""));
  EXPECT_FALSE(parse_cpu_stat("\n\n  \n"));
}

TEST(CpuStat, AnyMissingBandwidthKeyIsNoData) {
  // A truncated read must not look like a counter that dropped to zero.
  EXPECT_FALSE(parse_cpu_stat("nr_periods 5\nnr_throttled 2\n"));
  EXPECT_FALSE(parse_cpu_stat("nr_periods 5\nthrottled_time 7\n"));
  EXPECT_FALSE(parse_cpu_stat("nr_throttled 2\nthrottled_usec 7\n"));
}

TEST(CpuStat, GarbageLinesAreSkipped) {
  const auto s = parse_cpu_stat(
      "hello\n"
      "nr_periods 10\n"
      "nr_throttled 3 extra\n"  // three fields: not a key/value line
      "nr_throttled 4\n"
      "= = =\n"
      "throttled_usec 12x\n"  // trailing junk in the number
      "throttled_usec 8\n"
      "\tusage_usec\t\t9\t\n"  // tabs around fields are fine
      "nr_bursts -\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nr_periods, 10u);
  EXPECT_EQ(s->nr_throttled, 4u);
  EXPECT_EQ(s->throttled_ns, 8000u);
  EXPECT_EQ(s->usage_ns, 9000u);
}

TEST(CpuStat, GarbageValueOfARequiredKeyIsNoData) {
  EXPECT_FALSE(parse_cpu_stat("nr_periods ten\nnr_throttled 1\nthrottled_usec 5\n"));
  EXPECT_FALSE(parse_cpu_stat("nr_periods 10\nnr_throttled 1\nthrottled_usec -5\n"));
  EXPECT_FALSE(parse_cpu_stat("nr_periods 10\nnr_throttled 1\nthrottled_time 1.5\n"));
}

TEST(CpuStat, NoTrailingNewlineAndCrLf) {
  const auto s = parse_cpu_stat("nr_periods 1\r\nnr_throttled 1\r\nthrottled_usec 2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->throttled_ns, 2000u);
}

TEST(CpuStat, NegativePeriodCountersAreThe32BitWrap) {
  // The kernel keeps nr_periods/nr_throttled as int and prints them with %d.
  const auto s = parse_cpu_stat("nr_periods -2147483648\nnr_throttled -1\nthrottled_time 0\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nr_periods, 2147483648u);
  EXPECT_EQ(s->nr_throttled, 4294967295u);
  EXPECT_FALSE(parse_cpu_stat("nr_periods -2147483649\nnr_throttled 0\nthrottled_time 0\n"));
  EXPECT_FALSE(parse_cpu_stat("nr_periods 4294967296\nnr_throttled 0\nthrottled_time 0\n"));
}

TEST(CpuMax, UnlimitedAndLimited) {
  EXPECT_EQ(parse_cpu_max("max 100000\n"), (CpuLimit{std::nullopt, 100000}));
  EXPECT_EQ(parse_cpu_max("10000 100000\n"), (CpuLimit{10000, 100000}));
  EXPECT_EQ(parse_cpu_max("  250000   50000  "), (CpuLimit{250000, 50000}));
}

TEST(CpuMax, Malformed) {
  EXPECT_FALSE(parse_cpu_max(""));
  EXPECT_FALSE(parse_cpu_max("max"));  // the kernel always prints the period
  EXPECT_FALSE(parse_cpu_max("max max"));
  EXPECT_FALSE(parse_cpu_max("10000 0"));  // a zero period cannot be
  EXPECT_FALSE(parse_cpu_max("-1 100000"));
  EXPECT_FALSE(parse_cpu_max("10000 100000 5"));
  EXPECT_FALSE(parse_cpu_max("10k 100000"));
}

TEST(CfsLimit, V1QuotaAndPeriod) {
  EXPECT_EQ(parse_cfs_limit("-1\n", "100000\n"), (CpuLimit{std::nullopt, 100000}));
  EXPECT_EQ(parse_cfs_limit("10000\n", "100000\n"), (CpuLimit{10000, 100000}));
}

TEST(CfsLimit, Malformed) {
  EXPECT_FALSE(parse_cfs_limit("", "100000"));
  EXPECT_FALSE(parse_cfs_limit("10000", ""));
  EXPECT_FALSE(parse_cfs_limit("-2", "100000"));  // only -1 means unlimited
  EXPECT_FALSE(parse_cfs_limit("max", "100000"));
  EXPECT_FALSE(parse_cfs_limit("10000", "0"));
  EXPECT_FALSE(parse_cfs_limit("10000", "-1"));
}

TEST(CpuWeight, V2Range) {
  EXPECT_EQ(parse_cpu_weight("100\n"), 100u);
  EXPECT_EQ(parse_cpu_weight("1"), 1u);
  EXPECT_EQ(parse_cpu_weight("10000"), 10000u);
  EXPECT_FALSE(parse_cpu_weight("0"));
  EXPECT_FALSE(parse_cpu_weight("10001"));
  EXPECT_FALSE(parse_cpu_weight(""));
  EXPECT_FALSE(parse_cpu_weight("idle"));
}

TEST(CpuShares, ConvertLikeTheKernelReadsCpuWeight) {
  EXPECT_EQ(weight_from_shares(1024), 100u);  // both defaults agree
  EXPECT_EQ(weight_from_shares(512), 50u);
  EXPECT_EQ(weight_from_shares(2048), 200u);
  EXPECT_EQ(weight_from_shares(100), 10u);        // 9.77 rounds to nearest
  EXPECT_EQ(weight_from_shares(2), 1u);           // v1 minimum clamps to the v2 minimum
  EXPECT_EQ(weight_from_shares(262144), 10000u);  // v1 maximum clamps to the v2 maximum
  EXPECT_EQ(weight_from_shares(0), 1u);
  EXPECT_EQ(parse_cpu_shares_as_weight("1024\n"), 100u);
  EXPECT_FALSE(parse_cpu_shares_as_weight(""));
  EXPECT_FALSE(parse_cpu_shares_as_weight("-5"));
}

TEST(CpuStatContinuity, PassesThroughWhileTheCountersGrow) {
  CpuStatContinuity c;
  EXPECT_EQ(c.update(7, {10, 2, 500, 0}), (CpuBandwidthStats{10, 2, 500, 0}));
  EXPECT_EQ(c.update(7, {20, 5, 900, 0}), (CpuBandwidthStats{20, 5, 900, 0}));
}

TEST(CpuStatContinuity, PeriodCounterWrapAddsTwoToThe32) {
  CpuStatContinuity c;
  c.update(7, {4294967290u, 4294967295u, 500, 0});
  const auto t = c.update(7, {5, 3, 600, 0});
  EXPECT_EQ(t.nr_periods, 4294967296u + 5);
  EXPECT_EQ(t.nr_throttled, 4294967296u + 3);
  EXPECT_EQ(t.throttled_ns, 600u);
}

TEST(CpuStatContinuity, RecreatedCgroupCarriesTheOldCounts) {
  CpuStatContinuity c;
  c.update(7, {100, 40, 5000, 9000});
  // Same name, new kernfs id: the old cgroup's counts stay in the totals.
  EXPECT_EQ(c.update(8, {3, 1, 200, 10}), (CpuBandwidthStats{103, 41, 5200, 9010}));
  EXPECT_EQ(c.update(8, {4, 1, 300, 20}), (CpuBandwidthStats{104, 41, 5300, 9020}));
  // Even a new id whose counters are larger than the old ones is a new cgroup.
  EXPECT_EQ(c.update(9, {500, 50, 6000, 0}), (CpuBandwidthStats{604, 91, 11300, 9020}));
}

TEST(CpuStatContinuity, SixtyFourBitDropIsTreatedAsARestart) {
  CpuStatContinuity c;
  c.update(7, {10, 5, 5000, 0});
  const auto t = c.update(7, {11, 5, 100, 0});
  EXPECT_EQ(t.throttled_ns, 5100u);
  EXPECT_EQ(t.nr_periods, 11u);
}

TEST(CpuBandwidthStats, AddsFieldWise) {
  CpuBandwidthStats a{1, 2, 3, 4};
  a += CpuBandwidthStats{10, 20, 30, 40};
  EXPECT_EQ(a, (CpuBandwidthStats{11, 22, 33, 44}));
}
