// SPDX-License-Identifier: Apache-2.0
// The per-(tenant, agent) circuit breaker: trip, reset, quiet-period close, persistence.
#include <gtest/gtest.h>

#include "core/detect/circuit_breaker.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

TEST(BreakerTransitions, TripsAfterThreeConsecutiveSlowStages) {
  CircuitBreaker b;
  EXPECT_EQ(b.observe("acme", "rag", 250 * ms, 1 * ms), BreakerState::closed);
  EXPECT_EQ(b.observe("acme", "rag", 300 * ms, 2 * ms), BreakerState::closed);
  EXPECT_EQ(b.consecutive_slow("acme", "rag"), 2u);
  EXPECT_EQ(b.observe("acme", "rag", 201 * ms, 3 * ms), BreakerState::open);
  EXPECT_EQ(b.trips(), 1u);
  // Other pairs are independent.
  EXPECT_EQ(b.state("acme", "chat", 3 * ms), BreakerState::closed);
  EXPECT_EQ(b.state("other", "rag", 3 * ms), BreakerState::closed);
}

TEST(BreakerTransitions, AFastStageResetsTheCount) {
  CircuitBreaker b;
  b.observe("t", "a", 250 * ms, 1);
  b.observe("t", "a", 250 * ms, 2);
  EXPECT_EQ(b.observe("t", "a", 200 * ms, 3), BreakerState::closed);  // exactly 200: not slow
  EXPECT_EQ(b.consecutive_slow("t", "a"), 0u);
  b.observe("t", "a", 250 * ms, 4);
  EXPECT_EQ(b.observe("t", "a", 250 * ms, 5), BreakerState::closed);
  EXPECT_EQ(b.observe("t", "a", 250 * ms, 6), BreakerState::open);
}

TEST(BreakerTransitions, ClosesAfterTheQuietPeriodAndSlowStagesExtendIt) {
  BreakerConfig cfg;
  cfg.quiet_ns = 1000 * ms;
  CircuitBreaker b(cfg);
  for (uint64_t t = 1; t <= 3; t++) b.observe("t", "a", 500 * ms, t * ms);
  ASSERT_EQ(b.state("t", "a", 3 * ms), BreakerState::open);
  // Fast stages do not close it early; a slow one at 800 ms restarts the quiet period.
  EXPECT_EQ(b.observe("t", "a", 10 * ms, 500 * ms), BreakerState::open);
  EXPECT_EQ(b.observe("t", "a", 900 * ms, 800 * ms), BreakerState::open);
  EXPECT_EQ(b.state("t", "a", 1500 * ms), BreakerState::open);
  EXPECT_EQ(b.state("t", "a", 1800 * ms), BreakerState::closed);
  EXPECT_EQ(b.observe("t", "a", 10 * ms, 1800 * ms), BreakerState::closed);
  // Closed again: it takes three fresh slow stages to re-open.
  EXPECT_EQ(b.observe("t", "a", 900 * ms, 1900 * ms), BreakerState::closed);
  EXPECT_EQ(b.observe("t", "a", 900 * ms, 2000 * ms), BreakerState::closed);
  EXPECT_EQ(b.observe("t", "a", 900 * ms, 2100 * ms), BreakerState::open);
  EXPECT_EQ(b.trips(), 2u);
}

TEST(BreakerPersistence, RoundTripsThroughAString) {
  CircuitBreaker b;
  for (uint64_t t = 1; t <= 3; t++) b.observe("tenant with space", "a%b\tc", 500 * ms, t);
  b.observe("", "half", 500 * ms, 4);
  b.observe("", "half", 500 * ms, 5);
  std::string text = b.serialize();

  CircuitBreaker restored;
  ASSERT_TRUE(restored.deserialize(text)) << text;
  EXPECT_EQ(restored.state("tenant with space", "a%b\tc", 10), BreakerState::open);
  EXPECT_EQ(restored.consecutive_slow("", "half"), 2u);
  EXPECT_EQ(restored.trips(), 1u);
  EXPECT_EQ(restored.serialize(), text);
  // The restored count carries on: one more slow stage trips the second pair.
  EXPECT_EQ(restored.observe("", "half", 500 * ms, 6), BreakerState::open);
}

TEST(BreakerPersistence, RejectsMalformedInputAndKeepsItsState) {
  CircuitBreaker b;
  for (uint64_t t = 1; t <= 3; t++) b.observe("t", "a", 500 * ms, t);
  std::string before = b.serialize();
  for (const char* bad :
       {"", "garbage", "trips x\n", "trips 1\nv1 t a 2 0 0\n", "trips 1\nv1 t a 1 0\n",
        "trips 1\nv1 t%4 a 1 0 0\n", "trips 1\nv2 t a 1 0 0\n"}) {
    EXPECT_FALSE(b.deserialize(bad)) << bad;
    EXPECT_EQ(b.serialize(), before);
  }
}

}  // namespace
}  // namespace tailcause::core
