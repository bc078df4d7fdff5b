// SPDX-License-Identifier: Apache-2.0
// Vector-cache breakdown per (tenant, cache): the sliding window, entry and hysteresis, stale-age
// quantiles, the evidence text and the bound on tracked series.
#include <gtest/gtest.h>

#include "core/detect/cache_breakdown.h"
#include "core/detect/verdict.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr int kHit = 0, kMiss = 1, kStale = 2;

CacheRecord lookup(const char* tenant, const char* cache, int result, uint64_t at_ns,
                   uint64_t age_ns = 0) {
  CacheRecord r;
  r.id.tenant = tenant;
  r.id.agent = "rag-agent";
  r.id.pid = 77;
  r.id.request_id = 5;
  r.id.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  r.cache = cache;
  r.result = result;
  r.time_ns = at_ns;
  r.age_ns = age_ns;
  return r;
}

// No warm-up, so each test judges from its first lookup (warm-up has its own test).
CacheBreakdownSettings defaults() { return CacheBreakdownSettings{60, 20, 0.5, 0}; }

// What a stale-age quantile reports for a single-valued sample: its bucket's midpoint.
std::string reported(uint64_t ns) {
  return format_duration(LogLinearHistogram::midpoint(LogLinearHistogram::bucket_of(ns)));
}

TEST(CacheBreakdown, EntersOnceTheWindowHoldsEnoughLookupsWithTheRatio) {
  CacheBreakdownDetector d(defaults());
  uint64_t t = 100 * kSecond;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.observe(lookup("t-1", "rag", kHit, t += 1000)));
  // Ten misses and stales after ten hits: 50% only at the 20th lookup.
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(d.observe(lookup("t-1", "rag", kMiss, t += 1000)));
  EXPECT_FALSE(d.observe(lookup("t-1", "rag", kStale, t += 1000, 10 * kSecond)));
  EXPECT_FALSE(d.observe(lookup("t-1", "rag", kStale, t += 1000, 12 * kSecond)));
  EXPECT_FALSE(d.observe(lookup("t-1", "rag", kStale, t += 1000, 30 * kSecond)));
  const auto g = d.observe(lookup("t-1", "rag", kMiss, t += 1000));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->stage, "cache:rag");
  EXPECT_EQ(g->cause, "cache_breakdown");
  EXPECT_EQ(g->tenant, "t-1");
  EXPECT_EQ(g->agent, "rag-agent");
  EXPECT_EQ(g->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(g->pid, 77u);
  EXPECT_EQ(g->request_id, 5u);
  EXPECT_EQ(g->end_ns, t);
  EXPECT_EQ(g->start_ns, t - 60 * kSecond);
  EXPECT_TRUE(g->verdict.culprits.empty());
  // Nearest rank of 3 samples: P95 and P99 are both the largest (30 s).
  EXPECT_EQ(g->verdict.evidence,
            "cache rag: 50% of 20 lookups missed or stale in 60 s (miss 35%, stale 15%; "
            "stale age P95 " +
                reported(30 * kSecond) + ", P99 " + reported(30 * kSecond) + ")");

  const auto snap = d.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].tenant, "t-1");
  EXPECT_EQ(snap[0].cache, "rag");
  EXPECT_EQ(snap[0].lookups, 20u);
  EXPECT_EQ(snap[0].hits, 10u);
  EXPECT_EQ(snap[0].misses, 7u);
  EXPECT_EQ(snap[0].stales, 3u);
  EXPECT_DOUBLE_EQ(snap[0].ratio, 0.5);
  EXPECT_TRUE(snap[0].in_breakdown);
  EXPECT_EQ(snap[0].breakdowns, 1u);
  EXPECT_NEAR(snap[0].stale_age_p99_ns, 30.0 * kSecond, 30.0 * kSecond / 32);
}

TEST(CacheBreakdown, ACacheWarmingUpIsNoBreakdown) {
  CacheBreakdownDetector d(CacheBreakdownSettings{60, 20, 0.5, 60});
  // A fresh cache misses everything for its first minute: no verdict.
  for (int i = 0; i < 59; ++i)
    EXPECT_FALSE(d.observe(lookup("t", "rag", kMiss, (i + 1) * kSecond)));
  // Still missing once warm: a breakdown.
  EXPECT_TRUE(d.observe(lookup("t", "rag", kMiss, 61 * kSecond)));
}

TEST(CacheBreakdown, TooFewLookupsAreNoVerdict) {
  CacheBreakdownDetector d(defaults());
  for (int i = 0; i < 19; ++i)
    EXPECT_FALSE(d.observe(lookup("t", "rag", kMiss, (i + 1) * kSecond)));
  EXPECT_FALSE(d.snapshot()[0].in_breakdown);
  EXPECT_DOUBLE_EQ(d.snapshot()[0].ratio, 1.0);
  EXPECT_TRUE(d.observe(lookup("t", "rag", kMiss, 20 * kSecond)));
}

TEST(CacheBreakdown, ReportsAgainOnlyAfterLeavingBelowTheHysteresisRatio) {
  CacheBreakdownDetector d(defaults());
  uint64_t t = kSecond;
  int glitches = 0;
  auto feed = [&](int result, int n) {
    for (int i = 0; i < n; ++i)
      glitches += d.observe(lookup("t", "rag", result, t += 1000)).has_value();
  };
  feed(kMiss, 20);
  EXPECT_EQ(glitches, 1);
  // 20 misses, 25 hits: 44%, below the ratio but above 0.8 x 50% = 40%: still broken down.
  feed(kHit, 25);
  EXPECT_TRUE(d.snapshot()[0].in_breakdown);
  feed(kMiss, 10);  // back above 50%: not a new breakdown
  EXPECT_EQ(glitches, 1);
  // 30 misses, 46 hits: 39.5%, it left.
  feed(kHit, 21);
  EXPECT_FALSE(d.snapshot()[0].in_breakdown);
  EXPECT_NEAR(d.snapshot()[0].ratio, 30.0 / 76, 1e-12);
  feed(kMiss, 16);  // 46 of 92: 50% again, a new breakdown
  EXPECT_EQ(glitches, 2);
  EXPECT_EQ(d.snapshot()[0].breakdowns, 2u);
}

TEST(CacheBreakdown, TheWindowSlidesInSixthsAndAnEmptyWindowEndsTheBreakdown) {
  CacheBreakdownDetector d(defaults());
  EXPECT_EQ(d.window_ns(), 60 * kSecond);
  for (int i = 0; i < 30; ++i) d.observe(lookup("t", "rag", kMiss, 5 * kSecond + i));
  for (int i = 0; i < 30; ++i) d.observe(lookup("t", "rag", kHit, 55 * kSecond + i));
  EXPECT_EQ(d.snapshot(59 * kSecond)[0].lookups, 60u);
  EXPECT_TRUE(d.snapshot(59 * kSecond)[0].in_breakdown);
  // At 61 s the interval [0, 10 s) is out of the window: only the hits remain.
  const auto later = d.snapshot(61 * kSecond)[0];
  EXPECT_EQ(later.lookups, 30u);
  EXPECT_EQ(later.misses, 0u);
  EXPECT_DOUBLE_EQ(later.ratio, 0.0);
  EXPECT_TRUE(later.in_breakdown) << "no lookup since: the state is decided by lookups";
  const auto empty = d.snapshot(200 * kSecond)[0];
  EXPECT_EQ(empty.lookups, 0u);
  EXPECT_FALSE(empty.in_breakdown);
  // A new burst after the window emptied is a new breakdown.
  int glitches = 0;
  for (int i = 0; i < 20; ++i)
    glitches += d.observe(lookup("t", "rag", kMiss, 200 * kSecond + i)).has_value();
  EXPECT_EQ(glitches, 1);
  EXPECT_EQ(d.snapshot()[0].breakdowns, 2u);
  EXPECT_EQ(d.snapshot()[0].lookups, 20u);
}

TEST(CacheBreakdown, StaleAgeQuantilesCoverOnlyStaleResults) {
  CacheBreakdownDetector d(defaults());
  for (uint64_t s = 1; s <= 100; ++s) {
    d.observe(lookup("t", "rag", kStale, kSecond + s, s * kSecond));
    d.observe(lookup("t", "rag", kHit, kSecond + s, 5000 * kSecond));  // old hits: ignored
  }
  const auto st = d.snapshot()[0];
  EXPECT_EQ(st.stales, 100u);
  EXPECT_NEAR(st.stale_age_p95_ns, 95.0 * kSecond, 95.0 * kSecond / 32);
  EXPECT_NEAR(st.stale_age_p99_ns, 99.0 * kSecond, 99.0 * kSecond / 32);
  // Once the stale results leave the window, there is no stale age to report.
  d.observe(lookup("t", "rag", kHit, 300 * kSecond));
  EXPECT_EQ(d.snapshot()[0].stale_age_p99_ns, 0u);
}

TEST(CacheBreakdown, EvidenceWithoutStaleResultsHasNoAges) {
  CacheBreakdownDetector d(CacheBreakdownSettings{30, 4, 0.75, 0});
  std::optional<Glitch> g;
  for (int i = 0; i < 4 && !g; ++i) g = d.observe(lookup("t", "vectors", kMiss, kSecond + i));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->verdict.evidence,
            "cache vectors: 100% of 4 lookups missed or stale in 30 s (miss 100%, stale 0%)");
}

TEST(CacheBreakdown, TenantsAndCachesAreSeparate) {
  CacheBreakdownDetector d(defaults());
  int glitches = 0;
  for (int i = 0; i < 20; ++i) {
    glitches += d.observe(lookup("t-a", "rag", kMiss, kSecond + i)).has_value();
    glitches += d.observe(lookup("t-b", "rag", kHit, kSecond + i)).has_value();
    glitches += d.observe(lookup("t-a", "kv", kHit, kSecond + i)).has_value();
  }
  EXPECT_EQ(glitches, 1);
  const auto snap = d.snapshot();
  ASSERT_EQ(snap.size(), 3u);
  for (const auto& s : snap) {
    EXPECT_EQ(s.lookups, 20u);
    EXPECT_EQ(s.in_breakdown, s.tenant == "t-a" && s.cache == "rag") << s.tenant << " " << s.cache;
  }
}

TEST(CacheBreakdown, SeriesBeyondTheBoundAreCountedAndIgnored) {
  CacheBreakdownDetector d(defaults(), 2);
  d.observe(lookup("t-1", "rag", kMiss, kSecond));
  d.observe(lookup("t-2", "rag", kMiss, kSecond));
  for (int i = 0; i < 30; ++i) EXPECT_FALSE(d.observe(lookup("t-3", "rag", kMiss, kSecond + i)));
  EXPECT_EQ(d.series(), 2u);
  EXPECT_EQ(d.untracked(), 30u);
  d.observe(lookup("t-1", "rag", kMiss, 2 * kSecond));  // known series still count
  EXPECT_EQ(d.untracked(), 30u);
  EXPECT_EQ(CacheBreakdownDetector(defaults()).series(), 0u);
}

TEST(CacheBreakdown, CompetitionIsTheTenantsShareOfTheCachesChurnTimesItsMissRatio) {
  CacheBreakdownDetector d(defaults());
  const uint64_t t = 100 * kSecond;
  // "flood" misses 90 of 100 lookups, "steady" 10 of 100; "other-cache" is alone in its cache.
  for (int i = 0; i < 100; ++i) {
    d.observe(lookup("flood", "rag", i < 90 ? kMiss : kHit, t + i));
    d.observe(lookup("steady", "rag", i < 5 ? kMiss : i < 10 ? kStale : kHit, t + i));
    d.observe(lookup("alone", "other-cache", kMiss, t + i));
  }
  const auto flood = d.status("flood", "rag", t + kSecond);
  const auto steady = d.status("steady", "rag", t + kSecond);
  EXPECT_NEAR(flood.competition, 90.0 / 100 * 0.9, 1e-9);   // 0.81
  EXPECT_NEAR(steady.competition, 10.0 / 100 * 0.1, 1e-9);  // 0.01
  // A cache to itself competes with nobody, however much it misses.
  EXPECT_EQ(d.status("alone", "other-cache", t + kSecond).competition, 0.0);
  EXPECT_EQ(d.status("alone", "other-cache", t + kSecond).ratio, 1.0);
  // snapshot() computes the same figures for every series.
  for (const auto& s : d.snapshot(t + kSecond)) {
    EXPECT_EQ(s.competition, d.status(s.tenant, s.cache, t + kSecond).competition) << s.tenant;
  }
  // Unknown: no lookups, no competition. Once the window has passed, nothing competes.
  const auto unseen = d.status("nobody", "rag", t + kSecond);
  EXPECT_EQ(unseen.lookups, 0u);
  EXPECT_EQ(unseen.competition, 0.0);
  EXPECT_FALSE(unseen.in_breakdown);
  EXPECT_EQ(d.status("flood", "rag", t + 120 * kSecond).competition, 0.0);

  // The same cache name in another process is another cache: its tenant competes with nobody.
  for (int i = 0; i < 100; ++i) {
    auto r = lookup("elsewhere", "rag", kMiss, t + 200 * kSecond + i);
    r.id.pid = 78;
    d.observe(r);
  }
  EXPECT_EQ(d.status("elsewhere", "rag", t + 201 * kSecond).competition, 0.0);
  EXPECT_EQ(d.status("elsewhere", "rag", t + 201 * kSecond).pid, 78u);
  for (const auto& s : d.snapshot(t + 201 * kSecond))
    EXPECT_EQ(s.competition, 0.0) << s.tenant;  // the others' window has passed
}

TEST(CacheBreakdown, RefusesImpossibleSettingsAndResults) {
  EXPECT_THROW(CacheBreakdownDetector(CacheBreakdownSettings{0, 20, 0.5}), std::invalid_argument);
  EXPECT_THROW(CacheBreakdownDetector(CacheBreakdownSettings{60, 20, 0.0}), std::invalid_argument);
  EXPECT_THROW(CacheBreakdownDetector(CacheBreakdownSettings{60, 20, 1.5}), std::invalid_argument);
  CacheBreakdownDetector d(defaults());
  EXPECT_FALSE(d.observe(lookup("t", "rag", 7, kSecond)));
  EXPECT_EQ(d.series(), 0u);
}

}  // namespace
}  // namespace tailcause::core
