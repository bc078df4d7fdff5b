// SPDX-License-Identifier: Apache-2.0
// Requests grouped from recipe calls, judged as stages: the time between calls placed by the
// evidence around it, and the analyzer's verdicts on requests whose calls were as fast as ever.
#include "core/detect/recipe_request_stage.h"

#include <gtest/gtest.h>

#include "core/detect/glitch_analyzer.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;
constexpr size_t kOnCpu = index_of(Component::on_cpu);
constexpr size_t kThrottled = index_of(Component::cpu_throttled);
constexpr size_t kRunqueue = index_of(Component::runqueue);
constexpr size_t kUnattributed = index_of(Component::unattributed);

// A request of `wall_ms`, `calls_ms` of it inside the runtime's calls (on CPU).
RequestRecord request(uint64_t end_ms, uint64_t wall_ms, uint64_t calls_ms) {
  RequestRecord r;
  r.id.tenant = "llama";
  r.id.agent = "node";
  r.id.pid = 7;
  r.id.request_id = end_ms;
  r.start_ns = (end_ms - wall_ms) * ms;
  r.end_ns = end_ms * ms;
  r.recipe = true;
  r.in_calls_ns = calls_ms * ms;
  r.call_component_ns[kOnCpu] = calls_ms * ms;
  return r;
}

// 200 ordinary requests (18-20 ms, 11 ms in calls), 200 ms apart: none a verdict. Returns the
// last one's end (ms).
uint64_t warm_up(GlitchAnalyzer& a) {
  uint64_t t = 100'000;
  for (int i = 0; i < 200; i++) {
    AnalyzerOutput out;
    a.observe(request(t += 200, 18 + i % 3, 11), out);
    EXPECT_TRUE(out.glitches.empty());
    EXPECT_EQ(out.recipe_requests.size(), 1u);
  }
  return t;
}

TEST(RecipeRequestStage, TheTimeBetweenCallsGoesWhereTheEvidencePoints) {
  StageRecord s = recipe_request_stage(request(1000, 200, 11));
  EXPECT_EQ(s.stage, "request");
  EXPECT_TRUE(s.recipe());
  EXPECT_EQ(s.wall_ns(), 200 * ms);
  EXPECT_EQ(s.between_calls_ns, 189 * ms);
  EXPECT_EQ(s.component_ns[kUnattributed], 189 * ms);

  StageRecord quiet = s;
  place_between_calls(quiet, EvidenceHints{});
  EXPECT_EQ(quiet.component_ns[kUnattributed], 189 * ms) << "no evidence: nothing measured it";

  EvidenceHints throttled;
  throttled.throttled_periods = 9;
  throttled.periods = 10;
  StageRecord t = s;
  place_between_calls(t, throttled);
  EXPECT_EQ(t.component_ns[kThrottled], 189 * ms);
  EXPECT_EQ(t.component_ns[kUnattributed], 0u);
  EXPECT_EQ(t.component_ns[kOnCpu], 11 * ms);
  EXPECT_EQ(t.between_calls_ns, 0u) << "placed";
  place_between_calls(t, EvidenceHints{});
  EXPECT_EQ(t.component_ns[kThrottled], 189 * ms) << "placed once only";

  EvidenceHints rarely = throttled;
  rarely.throttled_periods = 2;  // 2 of 10 periods: the quota was not what held it
  StageRecord r = s;
  place_between_calls(r, rarely);
  EXPECT_EQ(r.component_ns[kThrottled], 0u);

  EvidenceHints preempted;
  preempted.preempting_cgroup = "cgroup /hog";
  preempted.runqueue_share = 0.6;
  StageRecord p = s;
  place_between_calls(p, preempted);
  EXPECT_EQ(p.component_ns[kRunqueue], 189 * ms);
  preempted.runqueue_share = 0.05;  // a few preemptions: not what held it
  StageRecord few = s;
  place_between_calls(few, preempted);
  EXPECT_EQ(few.component_ns[kRunqueue], 0u);
}

TEST(RecipeRequestStage, ASlowRequestWithFastCallsIsAVerdictOnItsThrottling) {
  GlitchAnalyzer a(AnalyzerSettings{});
  bool throttle = false;
  a.set_hint_source([&](const StageRecord&) {
    EvidenceHints h;
    h.cgroup = "/llama";
    if (throttle) {
      h.throttled_periods = 10;
      h.periods = 10;
      h.quota_cpus = 0.1;
    }
    return h;
  });
  uint64_t t = warm_up(a);
  throttle = true;
  AnalyzerOutput out;
  a.observe(request(t += 200, 200, 11), out);
  ASSERT_EQ(out.glitches.size(), 1u);
  const Glitch& g = out.glitches[0];
  EXPECT_EQ(g.stage, "request");
  EXPECT_EQ(g.cause, "cpu_throttled") << g.verdict.evidence;
  EXPECT_NE(g.verdict.evidence.find("throttled"), std::string::npos) << g.verdict.evidence;
  ASSERT_EQ(out.recipe_requests.size(), 1u);
  EXPECT_EQ(out.recipe_requests[0].component_ns[kThrottled], 189 * ms);
}

// A run-queue verdict waits for the evidence of the second it happened in: explained at once,
// it would cite the preemptions read before the fault began.
TEST(RecipeRequestStage, AVerdictWaitsForTheEvidenceThatCoversIt) {
  AnalyzerSettings settings;
  settings.evidence_delay_ns = 1'200 * ms;
  GlitchAnalyzer a(settings);
  std::string preemptor = "cgroup /llama (itself)";
  a.set_hint_source([&](const StageRecord&) {
    EvidenceHints h;
    h.cgroup = "/llama";
    h.preempting_cgroup = preemptor;
    h.runqueue_share = 0.5;
    return h;
  });
  uint64_t t = warm_up(a);
  AnalyzerOutput out;
  a.observe(request(t += 200, 200, 11), out);
  EXPECT_TRUE(out.glitches.empty()) << "parked until its evidence is posted";
  preemptor = "cgroup /noisy";  // the sched family's next read
  a.release_parked((t + 1'000) * ms, out);
  EXPECT_TRUE(out.glitches.empty()) << "not due yet";
  a.release_parked((t + 1'200) * ms, out);
  ASSERT_EQ(out.glitches.size(), 1u);
  EXPECT_EQ(out.glitches[0].cause, "runqueue");
  EXPECT_NE(out.glitches[0].verdict.evidence.find("/noisy"), std::string::npos)
      << out.glitches[0].verdict.evidence;
  EXPECT_EQ(a.glitch_count(), 1u);
}

}  // namespace
}  // namespace tailcause::core
