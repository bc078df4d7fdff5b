// SPDX-License-Identifier: Apache-2.0
// The OTLP trace budget: a token bucket of spans per second, glitch traces first, and
// OpenTelemetry's TraceIdRatioBased sample of normal ones.
#include <gtest/gtest.h>

#include <string>

#include "core/trace/trace_ids.h"
#include "core/trace/trace_sampler.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;
constexpr uint64_t s = 1'000'000'000;

std::string id(uint64_t n) { return derive_trace_id(1234, n, 99); }

TEST(TraceSampler, GlitchTracesSpendTheWholeBucketThenWaitForRefill) {
  TraceSampler t({.budget_spans_per_s = 100, .sample_normal = 0.0});
  // A full bucket of 100 spans: ten 10-span glitch traces, then nothing at the same instant.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(t.decide(id(i), true, 10, 5 * s), SampleResult::keep) << i;
  EXPECT_EQ(t.decide(id(10), true, 10, 5 * s), SampleResult::over_budget);
  EXPECT_EQ(t.decide(id(11), true, 1, 5 * s), SampleResult::over_budget);
  // 50 ms refill 5 tokens: a 5-span trace fits, a 6-span one does not.
  EXPECT_EQ(t.decide(id(12), true, 6, 5 * s + 50 * ms), SampleResult::over_budget);
  EXPECT_EQ(t.decide(id(13), true, 5, 5 * s + 50 * ms), SampleResult::keep);
  EXPECT_EQ(t.kept_spans(), 105u);
  EXPECT_EQ(t.over_budget_spans(), 10u + 1 + 6);
  // Refill stops at one second's worth.
  EXPECT_EQ(t.decide(id(14), true, 1, 100 * s), SampleResult::keep);
  EXPECT_DOUBLE_EQ(t.tokens(), 99.0);
}

TEST(TraceSampler, NormalTracesLeaveTheReserveToGlitches) {
  TraceSampler t({.budget_spans_per_s = 100, .sample_normal = 1.0, .glitch_reserve = 0.5});
  int kept = 0;
  for (int i = 0; i < 20; ++i) kept += t.decide(id(i), false, 10, 1 * s) == SampleResult::keep;
  EXPECT_EQ(kept, 5);  // 100 -> 50: the rest is the glitch reserve
  EXPECT_EQ(t.over_budget_spans(), 150u);
  // Glitches still find room for the reserve's 50 spans.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.decide(id(100 + i), true, 10, 1 * s), SampleResult::keep);
  EXPECT_EQ(t.decide(id(200), true, 1, 1 * s), SampleResult::over_budget);
}

TEST(TraceSampler, NeverExceedsTheBudgetOverTime) {
  // 2,000 traces a second of 7 spans, one in ten a glitch, for 20 s against 200 spans/s.
  TraceSampler t({.budget_spans_per_s = 200, .sample_normal = 0.5});
  uint64_t glitch_kept = 0, glitch_seen = 0;
  for (uint64_t i = 0; i < 40'000; ++i) {
    const bool glitch = i % 10 == 0;
    const auto r = t.decide(id(i), glitch, 7, 3 * s + i * (s / 2000));
    glitch_seen += glitch;
    glitch_kept += glitch && r == SampleResult::keep;
  }
  // One second's burst plus the refill of 20 s.
  EXPECT_LE(t.kept_spans(), 200u + 200u * 20);
  EXPECT_GE(t.kept_spans(), 200u * 19);  // and the budget is used
  // Glitches come first: 200 of them a second need 1,400 spans, so they take everything and
  // normal traces get nothing beyond the first burst.
  EXPECT_GE(glitch_kept * 7, t.kept_spans() - 100);
  EXPECT_LT(glitch_kept, glitch_seen);
  EXPECT_EQ(t.kept_spans() + t.over_budget_spans() + t.unsampled_spans(), 40'000u * 7);
}

TEST(TraceSampler, ATraceLargerThanTheBucketIsRefused) {
  TraceSampler t({.budget_spans_per_s = 10, .sample_normal = 1.0});
  EXPECT_EQ(t.decide(id(1), true, 11, 0), SampleResult::over_budget);
  EXPECT_EQ(t.decide(id(2), true, 10, 0), SampleResult::keep);
}

TEST(TraceSampler, NormalTracesAreSampledByTraceIdRatio) {
  TraceSampler none({.budget_spans_per_s = 1000, .sample_normal = 0.0});
  EXPECT_EQ(none.decide(id(1), false, 3, 0), SampleResult::unsampled);
  EXPECT_EQ(none.unsampled_spans(), 3u);
  EXPECT_EQ(none.decide(id(1), true, 3, 0), SampleResult::keep);  // glitches are never sampled out

  int in = 0;
  for (uint64_t i = 0; i < 100'000; ++i) {
    const bool a = TraceSampler::in_sample(id(i), 0.1);
    EXPECT_EQ(a, TraceSampler::in_sample(id(i), 0.1));  // stable
    if (a) {
      EXPECT_TRUE(TraceSampler::in_sample(id(i), 0.2));  // a larger share keeps it
    }
    in += a;
  }
  EXPECT_GT(in, 9'000);
  EXPECT_LT(in, 11'000);
  EXPECT_TRUE(TraceSampler::in_sample(id(7), 1.0));
  EXPECT_FALSE(TraceSampler::in_sample(id(7), 0.0));
}

// The figures of OpenTelemetry's Go SDK (TraceIDRatioBased: traceIDUpperBound =
// uint64(fraction * (1 << 63)); sampled when BigEndian.Uint64(traceID[8:16]) >> 1 is below it)
// and of the Python SDK (low 64 bits < round(rate * 2**64)), worked out by hand.
TEST(TraceSampler, RatioRuleIsOpenTelemetrysTraceIdRatioBased) {
  // 1%: uint64(0.01 * 2^63) = 92233720368547760 = 0x0147ae147ae147b0, so the low 64 bits must
  // be below 2 * that = 0x028f5c28f5c28f60.
  EXPECT_EQ(TraceSampler::ratio_upper_bound(0.01), 92233720368547760ULL);
  EXPECT_EQ(TraceSampler::ratio_upper_bound(0.5), 1ULL << 62);
  EXPECT_EQ(TraceSampler::ratio_upper_bound(1.0), 1ULL << 63);
  EXPECT_EQ(TraceSampler::ratio_upper_bound(0.0), 0u);
  EXPECT_TRUE(TraceSampler::in_sample("4bf92f3577b34da6028f5c28f5c28f5f", 0.01));
  EXPECT_FALSE(TraceSampler::in_sample("4bf92f3577b34da6028f5c28f5c28f60", 0.01));
  EXPECT_FALSE(TraceSampler::in_sample("4bf92f3577b34da6a3ce929d0e0e4736", 0.01));
  // Only the last 8 bytes count: the first 8 may be anything.
  EXPECT_TRUE(TraceSampler::in_sample("ffffffffffffffff028f5c28f5c28f5f", 0.01));
  EXPECT_TRUE(TraceSampler::in_sample("0000000000000001028F5C28F5C28F5F", 0.01));  // upper case
  // 50%: the top bit of byte 8 decides.
  EXPECT_TRUE(TraceSampler::in_sample("00000000000000007fffffffffffffff", 0.5));
  EXPECT_FALSE(TraceSampler::in_sample("00000000000000008000000000000000", 0.5));
  // The all-ones low half is kept only at 1.
  EXPECT_FALSE(TraceSampler::in_sample("0123456789abcdefffffffffffffffff", 0.999999));
  EXPECT_TRUE(TraceSampler::in_sample("0123456789abcdefffffffffffffffff", 1.0));
  EXPECT_TRUE(TraceSampler::in_sample("0123456789abcdef0000000000000001", 1e-18));
  EXPECT_FALSE(TraceSampler::in_sample("0123456789abcdef0000000000000000", 0.0));
  // Not a trace id: never sampled (it is never exported either).
  EXPECT_FALSE(TraceSampler::in_sample("0123456789abcdef012345678", 0.9));
  EXPECT_FALSE(TraceSampler::in_sample("0123456789abcdefg000000000000000", 0.9));
  EXPECT_FALSE(TraceSampler::in_sample("0123456789abcdef000000000000000g", 0.9));
}

// With the agent's traceparent, a normal trace follows its sampled flag (ParentBased).
TEST(TraceSampler, ANormalTraceFollowsTheAgentsSampledFlag) {
  TraceSampler none({.budget_spans_per_s = 1000, .sample_normal = 0.0});
  EXPECT_EQ(none.decide(id(1), false, 2, 0, true), SampleResult::keep);
  TraceSampler all({.budget_spans_per_s = 1000, .sample_normal = 1.0});
  EXPECT_EQ(all.decide(id(1), false, 2, 0, false), SampleResult::unsampled);
  EXPECT_EQ(all.decide(id(1), true, 2, 0, false), SampleResult::keep);  // a glitch, still
}

TEST(TraceSampler, AClockGoingBackwardsRefillsNothing) {
  TraceSampler t({.budget_spans_per_s = 10, .sample_normal = 1.0});
  EXPECT_EQ(t.decide(id(1), true, 10, 10 * s), SampleResult::keep);
  EXPECT_EQ(t.decide(id(2), true, 1, 1 * s), SampleResult::over_budget);
  EXPECT_EQ(t.decide(id(3), true, 1, 10 * s + 100 * ms), SampleResult::keep);
}

}  // namespace
}  // namespace tailcause::core
