// SPDX-License-Identifier: Apache-2.0
// What `tailcause diagnose` says a cache library did: warm-ups and rebalances per (tenant,
// cache) from the cache_action records, the hit rate before the first and after it, and the
// report's table and JSON.
#include <gtest/gtest.h>

#include "core/detect/cache_loop_report.h"
#include "core/report/diagnosis.h"

namespace tailcause::core {
namespace {

CacheRecord lookup(const char* tenant, int result) {
  CacheRecord r;
  r.id.tenant = tenant;
  r.cache = "retrieval";
  r.result = result;
  return r;
}

CacheActionRecord action(const char* tenant, int kind, uint64_t count, uint64_t at_ns) {
  CacheActionRecord r;
  r.tenant = tenant;
  r.cache = "retrieval";
  r.action = kind;
  r.count = count;
  r.time_ns = at_ns;
  return r;
}

constexpr int kHit = 0, kMiss = 1, kStale = 2;
constexpr int kWarmUp = 0, kRebalance = 1, kInvalidate = 2, kReject = 3, kEvict = 4;

TEST(CacheLoopReport, HitRateBeforeTheFirstWarmUpAndAfter) {
  CacheLoopTracker t;
  for (int i = 0; i < 40; ++i) t.observe(lookup("a", kMiss));
  t.observe(action("a", kWarmUp, 32, 1000));
  t.observe(action("a", kWarmUp, 16, 2000));
  t.observe(action("a", kRebalance, 300'000, 3000));
  for (int i = 0; i < 100; ++i) t.observe(lookup("a", i < 90 ? kHit : i < 95 ? kStale : kMiss));
  t.observe(action("b", kRebalance, 40'000, 3000));
  t.observe(action("b", kRebalance, 20'000, 4000));
  // Routine actions are the cache's own, not the loop's: they make no row.
  t.observe(action("c", kEvict, 5, 100));
  t.observe(action("c", kReject, 1, 100));
  t.observe(action("c", kInvalidate, 9, 100));
  t.observe(lookup("c", kHit));

  const auto s = t.summary();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tenant, "a");
  EXPECT_EQ(s[0].warmups, 2u);
  EXPECT_EQ(s[0].warmed_entries, 48u);
  EXPECT_EQ(s[0].rebalances, 1u);
  EXPECT_EQ(s[0].quota_bytes, 300'000u);
  EXPECT_EQ(s[0].first_action_ns, 1000u);
  EXPECT_EQ(s[0].lookups_before, 40u);
  EXPECT_EQ(s[0].hit_rate_before(), 0.0);
  EXPECT_EQ(s[0].lookups_after, 100u);
  EXPECT_DOUBLE_EQ(*s[0].hit_rate_after(), 0.9);  // stale is no hit
  EXPECT_EQ(s[1].tenant, "b");
  EXPECT_EQ(s[1].quota_bytes, 20'000u);  // the last one
  EXPECT_FALSE(s[1].hit_rate_before());  // no lookups: no rate
  EXPECT_FALSE(s[1].hit_rate_after());
}

TEST(CacheLoopReport, SeriesBeyondTheBoundAreCountedAndIgnored) {
  CacheLoopTracker t(1);
  t.observe(lookup("a", kHit));
  t.observe(lookup("b", kHit));
  t.observe(action("b", kWarmUp, 1, 1));
  EXPECT_EQ(t.untracked(), 2u);
  EXPECT_TRUE(t.summary().empty());
}

TEST(CacheLoopReport, DiagnoseShowsWhatTheLoopDid) {
  CacheLoopTracker t;
  for (int i = 0; i < 10; ++i) t.observe(lookup("a", kMiss));
  t.observe(action("a", kWarmUp, 78, 1000));
  t.observe(action("a", kRebalance, 279'533, 1100));
  for (int i = 0; i < 8; ++i) t.observe(lookup("a", i < 7 ? kHit : kMiss));
  AnalyzerSummary summary;
  summary.cache_loop = t.summary();
  const Diagnosis d = build_diagnosis(summary, {}, {}, 10.0);
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Vector cache actions (warm-ups, quota rebalances)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("a       retrieval  1 (78 entries)  1           273 KiB  0% -> 88%"),
            std::string::npos)
      << text;
  const auto j = diagnosis_json(d)["cache_actions"];
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["warmed_entries"], 78);
  EXPECT_EQ(j[0]["quota_bytes"], 279'533);
  EXPECT_EQ(j[0]["lookups_before"], 10);
  EXPECT_DOUBLE_EQ(j[0]["hit_rate_after"].get<double>(), 0.875);
  // Nothing done: the section says so.
  EXPECT_NE(render_diagnosis_text(build_diagnosis({}, {}, {}, 10.0))
                .find("Vector cache actions (warm-ups, quota rebalances)\n  none seen"),
            std::string::npos);
}

}  // namespace
}  // namespace tailcause::core
