// SPDX-License-Identifier: Apache-2.0
// The analyzer: records in, glitches with verdicts (and the other families' evidence), the
// circuit breaker, request traces for export, the glitch series and the diagnose summary.
#include <gtest/gtest.h>

#include "core/detect/glitch_analyzer.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;
constexpr uint32_t kPid = 4242;

Identity id(const std::string& tenant, uint64_t request) {
  Identity i;
  i.request_id = request;
  i.pid = kPid;
  i.tenant = tenant;
  i.agent = "rag";
  i.trace_id = "0123456789abcdef0123456789abcd" + std::to_string(10 + request % 90);
  return i;
}

StageRecord stage(const std::string& tenant, uint64_t request, const std::string& name,
                  uint64_t start_ns, uint64_t on_cpu_ns, uint64_t throttled_ns = 0) {
  return testing::StageBuilder()
      .identity(id(tenant, request))
      .tid(kPid)
      .stage(name)
      .kind(StageKind::generation)
      .start_ns(start_ns)
      .component(Component::on_cpu, on_cpu_ns)
      .component(Component::cpu_throttled, throttled_ns)
      .build();
}

RequestRecord request(const std::string& tenant, uint64_t request_id, uint64_t start_ns,
                      uint64_t end_ns) {
  RequestRecord r;
  r.id = id(tenant, request_id);
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  return r;
}

AnalyzerOutput feed(GlitchAnalyzer& a, const Record& r) {
  AnalyzerOutput out;
  a.observe(r, out);
  return out;
}

double value(const MetricSet& m, const std::string& name, const Labels& labels) {
  const Sample* s = m.find(name, labels);
  return s ? s->value : -1;
}

TEST(GlitchAnalyzer, SlowStageIsAGlitchExplainedWithTheFamiliesEvidence) {
  GlitchAnalyzer a(AnalyzerSettings{});
  int asked = 0;
  a.set_hint_source([&](const StageRecord&) {
    asked++;
    EvidenceHints h;
    h.cgroup = "/agents/ta";
    h.throttled_periods = 41;
    h.periods = 50;
    h.quota_cpus = 0.1;
    return h;
  });
  uint64_t t = 1'000 * ms;
  for (uint64_t i = 1; i <= 10; i++, t += 200 * ms) {
    EXPECT_TRUE(feed(a, stage("ta", i, "generation", t, 100 * ms)).glitches.empty());
  }
  EXPECT_EQ(asked, 0) << "evidence is only asked for glitches";
  auto out = feed(a, stage("ta", 11, "generation", t, 500 * ms, 900 * ms));
  ASSERT_EQ(out.glitches.size(), 1u);
  const Glitch& g = out.glitches[0];
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(g.cause, "cpu_throttled");
  EXPECT_EQ(g.tenant, "ta");
  EXPECT_EQ(g.stage, "generation");
  EXPECT_EQ(g.request_id, 11u);
  EXPECT_EQ(g.component_ns[static_cast<size_t>(Component::cpu_throttled)], 900 * ms);
  EXPECT_EQ(g.verdict.evidence,
            "generation 1.4 s, 64% cpu_throttled: cgroup /agents/ta throttled in 41 of 50 "
            "periods (quota 0.1 CPU), 36% on_cpu");

  MetricSet m;
  a.collect(m, t + 2'000 * ms);
  EXPECT_EQ(value(m, "tailcause_glitches",
                  {{"tenant", "ta"},
                   {"agent", "rag"},
                   {"stage", "generation"},
                   {"cause", "cpu_throttled"}}),
            1);
}

TEST(GlitchAnalyzer, SlowRequestIsExplainedByItsSlowestGlitchingStage) {
  GlitchAnalyzer a(AnalyzerSettings{});
  uint64_t t = 1'000 * ms;
  feed(a, stage("ta", 7, "retrieval", t, 50 * ms));
  feed(a, stage("ta", 7, "generation", t + 50 * ms, 300 * ms, 700 * ms));
  auto out = feed(a, request("ta", 7, t, t + 1'050 * ms));
  ASSERT_EQ(out.glitches.size(), 1u);
  const Glitch& g = out.glitches[0];
  EXPECT_EQ(g.stage, GlitchDetector::kRequestStage);
  EXPECT_EQ(g.cause, "cpu_throttled");
  EXPECT_EQ(g.verdict.evidence.rfind("request 1.05 s: generation 1 s, 70% cpu_throttled", 0), 0u)
      << g.verdict.evidence;
  EXPECT_EQ(a.pending_requests(), 0u) << "the request's state is freed when it ends";
}

// Regression: the slowest of several glitching stages explains the request, in either order
// (max_element was given a greater-than comparator and picked the fastest).
TEST(GlitchAnalyzer, SlowRequestWithTwoGlitchingStagesBlamesTheSlowerOne) {
  for (bool slow_first : {false, true}) {
    GlitchAnalyzer a(AnalyzerSettings{});
    uint64_t t = 1'000 * ms;
    const uint64_t req = slow_first ? 8 : 9;
    // Both over the 200 ms stage SLO: retrieval 250 ms on CPU, generation 1 s mostly throttled.
    auto fast = stage("ta", req, "retrieval", t, 250 * ms);
    auto slow = stage("ta", req, "generation", t + 250 * ms, 300 * ms, 700 * ms);
    ASSERT_EQ(feed(a, slow_first ? slow : fast).glitches.size(), 1u);
    ASSERT_EQ(feed(a, slow_first ? fast : slow).glitches.size(), 1u);
    auto out = feed(a, request("ta", req, t, t + 1'250 * ms));
    ASSERT_EQ(out.glitches.size(), 1u);
    EXPECT_EQ(out.glitches[0].cause, "cpu_throttled");
    EXPECT_NE(out.glitches[0].verdict.evidence.find(": generation 1 s, 70% cpu_throttled"),
              std::string::npos)
        << out.glitches[0].verdict.evidence;
  }
}

TEST(GlitchAnalyzer, TracesGroupStagesUnderTheirRequest) {
  AnalyzerSettings s;
  s.collect_traces = true;
  GlitchAnalyzer a(s);
  a.set_unix_offset_ns(1'700'000'000'000'000'000LL);
  uint64_t t = 1'000 * ms;
  // Stages arrive in end order; the trace lists them by start.
  feed(a, stage("ta", 3, "generation", t + 20 * ms, 300 * ms));
  feed(a, stage("ta", 3, "embedding", t, 10 * ms));
  StageRecord worker = stage("ta", 3, "generation", t + 30 * ms, 100 * ms);
  worker.kind = StageRecord::kWorkerSpanKind;
  worker.tid = kPid + 1;
  EXPECT_TRUE(feed(a, worker).glitches.empty());
  auto out = feed(a, request("ta", 3, t, t + 330 * ms));
  ASSERT_EQ(out.traces.size(), 1u);
  const RequestTrace& tr = out.traces[0];
  ASSERT_EQ(tr.stages.size(), 3u);
  EXPECT_EQ(tr.stages[0].stage, "embedding");
  EXPECT_EQ(tr.stages[1].stage, "generation");
  EXPECT_EQ(tr.stages[2].tid, kPid + 1);
  EXPECT_EQ(tr.trace_id, tr.request.id.trace_id);
  EXPECT_TRUE(tr.trace_id_from_agent);
  EXPECT_EQ(tr.unix_offset_ns, 1'700'000'000'000'000'000LL);
  ASSERT_EQ(tr.glitches.size(), 1u) << "the 300 ms generation stage is over the 200 ms SLO";
  EXPECT_EQ(tr.stage_glitch(1), &tr.glitches[0]);
  EXPECT_EQ(tr.stage_glitch(0), nullptr);
}

TEST(GlitchAnalyzer, NoTracesKeptUnlessAsked) {
  GlitchAnalyzer a(AnalyzerSettings{});
  feed(a, stage("ta", 3, "embedding", 1'000 * ms, 10 * ms));
  EXPECT_TRUE(feed(a, request("ta", 3, 1'000 * ms, 1'010 * ms)).traces.empty());
}

TEST(GlitchAnalyzer, GlitchedTracesOnlyDropsTheTracesOfNormalRequests) {
  AnalyzerSettings s;
  s.collect_traces = true;
  s.glitched_traces_only = true;  // the journal's propagation trees, without OTLP
  GlitchAnalyzer a(s);
  feed(a, stage("ta", 3, "embedding", 1'000 * ms, 10 * ms));
  EXPECT_TRUE(feed(a, request("ta", 3, 1'000 * ms, 1'010 * ms)).traces.empty());
  feed(a, stage("ta", 4, "embedding", 2'000 * ms, 10 * ms));
  feed(a, stage("ta", 4, "generation", 2'010 * ms, 300 * ms));  // over the 200 ms SLO
  const auto out = feed(a, request("ta", 4, 2'000 * ms, 2'310 * ms));
  ASSERT_EQ(out.traces.size(), 1u);
  EXPECT_EQ(out.traces[0].stages.size(), 2u);
  EXPECT_EQ(a.pending_requests(), 0u);
}

TEST(GlitchAnalyzer, PendingRequestsAreBoundedAndFreedWithTheirProcess) {
  AnalyzerSettings s;
  s.collect_traces = true;
  s.max_pending_requests = 3;
  s.pending_timeout_ns = 10'000 * ms;
  GlitchAnalyzer a(s);
  for (uint64_t r = 1; r <= 5; r++) feed(a, stage("ta", r, "embedding", r * ms, ms));
  EXPECT_EQ(a.pending_requests(), 3u);
  EXPECT_EQ(a.dropped_requests(), 2u);
  feed(a, ProcessRecord{false, kPid});
  EXPECT_EQ(a.pending_requests(), 0u);
  feed(a, stage("ta", 9, "embedding", 1'000 * ms, ms));
  a.tick(20'000 * ms);  // never ended: dropped after the timeout
  EXPECT_EQ(a.pending_requests(), 0u);
  EXPECT_EQ(a.dropped_requests(), 3u);
}

TEST(GlitchAnalyzer, BreakerOpensAfterConsecutiveSlowStagesAndShowsAsAMetric) {
  GlitchAnalyzer a(AnalyzerSettings{});
  uint64_t t = 1'000 * ms;
  for (uint64_t i = 1; i <= 3; i++, t += 300 * ms) feed(a, stage("ta", i, "tool", t, 250 * ms));
  feed(a, stage("tb", 9, "tool", t, 10 * ms));
  MetricSet m;
  a.collect(m, t);
  EXPECT_EQ(value(m, "tailcause_circuit_breaker_open", {{"tenant", "ta"}, {"agent", "rag"}}), 1);
  EXPECT_EQ(value(m, "tailcause_circuit_breaker_open", {{"tenant", "tb"}, {"agent", "rag"}}), 0);
  EXPECT_EQ(value(m, "tailcause_circuit_breaker_trips", {}), 1);
}

TEST(GlitchAnalyzer, GlitchSeriesFoldTenantsBeyondTopK) {
  AnalyzerSettings s;
  s.top_k = 2;
  GlitchAnalyzer a(s);
  for (const char* t : {"t1", "t2", "t3", "t4"}) feed(a, stage(t, 1, "tool", 1'000 * ms, 300 * ms));
  MetricSet m;
  a.collect(m, 2'000 * ms);
  EXPECT_EQ(value(m, "tailcause_glitches", {{"tenant", "t1"}, {"stage", "tool"}}), 1);
  EXPECT_EQ(value(m, "tailcause_glitches", {{"tenant", "__other__"}, {"stage", "tool"}}), 2);
  EXPECT_EQ(value(m, "tailcause_glitches", {{"tenant", "t4"}}), -1);
}

TEST(GlitchAnalyzer, SummaryForDiagnose) {
  GlitchAnalyzer a(AnalyzerSettings{});
  uint64_t t = 1'000 * ms;
  for (uint64_t i = 1; i <= 100; i++, t += 10 * ms) {
    feed(a, stage("ta", i, "embedding", t, i * ms));
    feed(a, request("ta", i, t, t + i * ms));
  }
  CacheRecord c;
  c.id = id("ta", 1);
  c.cache = "rag";
  c.result = 1;
  feed(a, c);
  c.result = 0;
  feed(a, c);
  AnalyzerSummary s = a.summary(t);
  ASSERT_EQ(s.tenants.size(), 1u);
  EXPECT_EQ(s.tenants[0].requests, 100u);
  EXPECT_DOUBLE_EQ(s.tenants[0].cache_breakdown_rate(), 0.5);
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].count, 100u);
  EXPECT_NEAR(static_cast<double>(s.stages[0].p50_ns), 50.0 * ms, 3.0 * ms);
  EXPECT_NEAR(static_cast<double>(s.stages[0].p99_ns), 99.0 * ms, 4.0 * ms);
  EXPECT_EQ(s.glitches, 0u);
}

}  // namespace
}  // namespace tailcause::core

namespace tailcause::core {
namespace {

TEST(GlitchAnalyzer, BreakerStreaksCountPerStageSoFastStagesInBetweenDoNotHideThem) {
  GlitchAnalyzer a(AnalyzerSettings{});
  uint64_t t = 1'000 * ms;
  for (uint64_t i = 1; i <= 3; i++, t += 400 * ms) {
    feed(a, stage("ta", i, "embedding", t, 5 * ms));
    feed(a, stage("ta", i, "generation", t + 5 * ms, 300 * ms));
    feed(a, stage("ta", i, "tool", t + 305 * ms, 5 * ms));
  }
  EXPECT_EQ(a.breaker().state("ta", "rag", t), BreakerState::open);
  // Slow stages of different names, each once between fast ones of its own name: closed.
  GlitchAnalyzer b(AnalyzerSettings{});
  t = 1'000 * ms;
  for (const char* name : {"embedding", "generation", "tool"}) {
    feed(b, stage("tb", 1, name, t, 300 * ms));
    feed(b, stage("tb", 1, name, t + 300 * ms, 5 * ms));
    t += 400 * ms;
  }
  EXPECT_EQ(b.breaker().state("tb", "rag", t), BreakerState::closed);
}

}  // namespace
}  // namespace tailcause::core

namespace tailcause::core {
namespace {

TEST(GlitchAnalyzer, SummaryKeepsTheSlowestFewOfEachCauseSoFastCausesKeepExamples) {
  AnalyzerSettings s;
  s.cache.min_lookups = 4;
  s.cache.warmup_s = 0;
  GlitchAnalyzer a(s);
  uint64_t t = 1'000 * ms;
  for (uint64_t i = 1; i <= 10; i++, t += 10 * ms)
    feed(a, stage("ta", i, "tool", t, 300 * ms + i * ms));
  CacheRecord c;
  c.id = id("tb", 1);
  c.cache = "rag";
  c.result = 1;
  for (int i = 0; i < 4; i++) {
    c.time_ns = t + i * ms;
    feed(a, c);
  }
  AnalyzerSummary sum = a.summary(t + 10 * ms);
  EXPECT_EQ(sum.glitches, 11u);
  ASSERT_EQ(sum.top_glitches.size(), GlitchAnalyzer::kTopPerCause + 1);
  EXPECT_EQ(sum.top_glitches[0].check.wall_ns, 310 * ms) << "slowest first";
  EXPECT_EQ(sum.top_glitches.back().cause, "cache_breakdown");
  EXPECT_EQ(sum.top_glitches.back().tenant, "tb");
}

}  // namespace
}  // namespace tailcause::core
