// SPDX-License-Identifier: Apache-2.0
// The glitch detector: SLO and P99 rules, per-stage SLOs, per-(tenant, stage) windows, and
// verdicts against the profile learned from normal stages.
#include <gtest/gtest.h>

#include <random>

#include "core/detect/glitch_detector.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

StageRecord stage(const std::string& tenant, const std::string& name, uint64_t end_ns,
                  uint64_t on_cpu_ns, uint64_t network_ns = 0, uint64_t throttled_ns = 0) {
  return testing::StageBuilder()
      .tenant(tenant)
      .agent("rag")
      .trace_id("0123456789abcdef0123456789abcdef")
      .stage(name)
      .component(Component::on_cpu, on_cpu_ns)
      .component(Component::network, network_ns)
      .component(Component::cpu_throttled, throttled_ns)
      .end_ns(end_ns)
      .build();
}

TEST(GlitchSlo, StageOverDefaultOrConfiguredSloIsAGlitch) {
  GlitchConfig cfg;
  cfg.stage_slo_ns_by_stage["generation"] = 1'000 * ms;
  GlitchDetector d(cfg);
  EXPECT_EQ(d.slo_for("retrieval"), 200 * ms);
  EXPECT_EQ(d.slo_for("generation"), 1'000 * ms);
  EXPECT_EQ(d.slo_for(GlitchDetector::kRequestStage), 800 * ms);

  uint64_t t = 10'000 * ms;
  EXPECT_FALSE(d.observe(stage("a", "retrieval", t, 150 * ms)));
  auto g = d.observe(stage("a", "retrieval", t + ms, 250 * ms));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->check.reason, GlitchReason::over_slo);
  EXPECT_EQ(g->check.slo_ns, 200 * ms);
  EXPECT_FALSE(g->check.p99_ns);  // too few samples to trust a P99
  EXPECT_EQ(g->trace_id, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(g->verdict.evidence, "retrieval 250 ms, 100% on_cpu");
  // 900 ms generation is within its own 1 s SLO.
  EXPECT_FALSE(d.observe(stage("a", "generation", t + 2 * ms, 900 * ms)));
  EXPECT_TRUE(d.observe(stage("a", "generation", t + 3 * ms, 1'100 * ms)));
}

// A sustained fault (every stage 6x) keeps its verdicts for the window's length: its own
// slow stages never enter the P99 window; past the window the shift is the new normal.
TEST(GlitchP99, AFaultDoesNotRaiseItsOwnThreshold) {
  GlitchConfig cfg;
  cfg.min_samples = 50;
  GlitchDetector d(cfg);
  uint64_t t = 10'000 * ms;
  // 20 stages a second of 10-12 ms for 30 s, then 30 ms (3x, 0.4 of the 200 ms SLO) for 50 s.
  for (int i = 0; i < 600; i++) {
    ASSERT_FALSE(d.observe(stage("a", "tool", t += 50 * ms, (10 + i % 3) * ms)));
  }
  int verdicts = 0;
  for (int i = 0; i < 1000; i++)
    verdicts += d.observe(stage("a", "tool", t += 50 * ms, 30 * ms)) ? 1 : 0;
  EXPECT_EQ(verdicts, 1000) << "every stage of the fault, though they are the window's P99 now";
  // 60 s later the window has no sample left from before: the fault's level is learned.
  t += 61'000 * ms;
  for (int i = 0; i < 100; i++) d.observe(stage("a", "tool", t += 50 * ms, 30 * ms));
  EXPECT_FALSE(d.observe(stage("a", "tool", t += 50 * ms, 30 * ms)));
}

TEST(GlitchP99, FarAboveRecentP99IsAGlitchOnceTheWindowIsFull) {
  GlitchConfig cfg;
  cfg.min_samples = 50;
  cfg.p99_factor = 2.0;
  GlitchDetector d(cfg);
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint64_t> normal(8 * ms, 12 * ms);
  uint64_t t = 10'000 * ms;
  // 49 samples: a 60 ms stage is under the SLO and the P99 is not trusted yet.
  for (int i = 0; i < 49; i++) ASSERT_FALSE(d.observe(stage("a", "tool", t += ms, normal(rng))));
  EXPECT_FALSE(d.observe(stage("a", "tool", t += ms, 60 * ms)));
  // Now 50 samples (P99 about 12 ms): 30 ms is over 2 x P99, though far under the SLO.
  for (int i = 0; i < 100; i++) ASSERT_FALSE(d.observe(stage("a", "tool", t += ms, normal(rng))));
  auto g = d.observe(stage("a", "tool", t += ms, 10 * ms, 20 * ms));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->check.reason, GlitchReason::over_p99);
  ASSERT_TRUE(g->check.p99_ns);
  EXPECT_GT(*g->check.p99_ns, 11 * ms);
  EXPECT_LT(*g->check.p99_ns, 13 * ms);
  EXPECT_EQ(g->verdict.culprits.at(0).component, Component::network);
  // The text names the P99 rule's limit, never the SLO the stage did not cross.
  const std::string text = threshold_text(g->check);
  EXPECT_EQ(text.rfind("over_p99 ", 0), 0u) << text;
  EXPECT_NE(text.find("(2x P99 "), std::string::npos) << text;
  EXPECT_EQ(text.find("200 ms"), std::string::npos) << text;
  // 20 ms is under 2 x P99.
  EXPECT_FALSE(d.observe(stage("a", "tool", t += ms, 20 * ms)));
  // Another tenant's stage of the same name has its own (empty) window.
  EXPECT_FALSE(d.observe(stage("b", "tool", t += ms, 30 * ms)));
  // Over both thresholds.
  auto both = d.observe(stage("a", "tool", t += ms, 300 * ms));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->check.reason, GlitchReason::both);
  EXPECT_EQ(threshold_text(both->check).rfind("over_slo 200 ms, over_p99 ", 0), 0u)
      << threshold_text(both->check);
}

TEST(GlitchThreshold, TextGivesEachCrossedLimitWithItsValue) {
  GlitchCheck c;
  c.slo_ns = 200 * ms;
  c.wall_ns = 43 * ms;
  c.p99_ns = 10 * ms;
  c.p99_factor = 2;
  c.reason = GlitchReason::over_p99;
  EXPECT_EQ(threshold_text(c), "over_p99 20 ms (2x P99 10 ms)");
  c.reason = GlitchReason::over_slo;
  EXPECT_EQ(threshold_text(c), "over_slo 200 ms");
  c.reason = GlitchReason::both;
  EXPECT_EQ(threshold_text(c), "over_slo 200 ms, over_p99 20 ms (2x P99 10 ms)");
}

TEST(GlitchP99, SamplesLeaveTheWindowSoTheP99RuleWaitsAgain) {
  GlitchConfig cfg;
  cfg.window_interval_ns = 1'000 * ms;
  cfg.window_intervals = 5;  // 5 s window
  GlitchDetector d(cfg);
  uint64_t t = 10'000 * ms;
  for (int i = 0; i < 60; i++) d.observe(stage("a", "tool", t += ms, 10 * ms));
  EXPECT_TRUE(d.observe(stage("a", "tool", t + ms, 50 * ms)));
  // A minute later the window is empty again: 50 ms is no glitch.
  EXPECT_FALSE(d.observe(stage("a", "tool", t + 60'000 * ms, 50 * ms)));
}

TEST(GlitchVerdict, ExplainsAgainstTheProfileOfNormalStagesOnly) {
  GlitchDetector d;
  uint64_t t = 10'000 * ms;
  for (int i = 0; i < 20; i++) d.observe(stage("a", "generation", t += ms, 100 * ms, 20 * ms));
  auto g = d.observe(stage("a", "generation", t += ms, 100 * ms, 20 * ms, 300 * ms));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->verdict.evidence, "generation 420 ms, 71% cpu_throttled");
  // The glitch did not enter the profile.
  const ComponentProfile* p = d.profile("a", "generation");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->samples(), 20u);
  EXPECT_NEAR(p->fraction(Component::cpu_throttled), 0.0, 1e-12);
  // But it did enter the latency window.
  EXPECT_EQ(d.window("a", "generation")->count(t), 21u);
}

TEST(GlitchRequest, RequestOverItsSlo) {
  GlitchDetector d;
  RequestRecord r;
  r.id.tenant = "a";
  r.id.agent = "rag";
  r.start_ns = 10'000 * ms;
  r.end_ns = r.start_ns + 700 * ms;
  EXPECT_FALSE(d.observe(r));
  r.end_ns = r.start_ns + 1'250 * ms;
  auto g = d.observe(r);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->stage, "request");
  EXPECT_EQ(g->check.reason, GlitchReason::over_slo);
  EXPECT_EQ(g->verdict.evidence, "request 1.25 s");
}

TEST(GlitchBounds, SeriesBeyondTheLimitStillGetSloChecks) {
  GlitchConfig cfg;
  cfg.max_series = 2;
  GlitchDetector d(cfg);
  uint64_t t = 10'000 * ms;
  d.observe(stage("a", "x", t, ms));
  d.observe(stage("b", "x", t, ms));
  EXPECT_FALSE(d.observe(stage("c", "x", t, ms)));
  EXPECT_EQ(d.series(), 2u);
  EXPECT_EQ(d.untracked(), 1u);
  auto g = d.observe(stage("c", "x", t, 300 * ms));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->verdict.evidence, "x 300 ms, 100% on_cpu");
}

}  // namespace
}  // namespace tailcause::core
