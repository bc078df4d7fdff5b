// SPDX-License-Identifier: Apache-2.0
// The series budget: which label combinations keep a series of their own, which fold, and how
// the heaviest take the place of lighter ones without churn or unbounded memory.
#include "core/aggregate/series_budget.h"

#include <gtest/gtest.h>

#include <string>

namespace tailcause::core {
namespace {

TEST(SeriesBudget, KeepsTheFirstKeysUpToItsCapacityAndFoldsTheRest) {
  SeriesBudget<std::string> b(2);
  EXPECT_TRUE(b.keeps("a", 1));
  EXPECT_TRUE(b.keeps("b", 1));
  EXPECT_FALSE(b.keeps("c", 1));
  EXPECT_FALSE(b.keeps("c", 1));
  EXPECT_TRUE(b.keeps("a", 1));  // a kept key stays kept
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.folded(), 2u);  // observations, not keys
}

TEST(SeriesBudget, AHeavyFoldedKeyTakesTheLightestKeptKeysPlace) {
  SeriesBudget<std::string> b(2);
  b.keeps("light", 1);
  b.keeps("steady", 10);
  for (int i = 0; i < 5; ++i) b.keeps("heavy", 5);  // 25 > 2 x 1
  const auto evicted = b.rebalance();
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0], "light");
  EXPECT_TRUE(b.contains("heavy"));
  EXPECT_TRUE(b.contains("steady"));
  EXPECT_FALSE(b.contains("light"));
  b.count_folded(1);  // the owner moved light's one observation to the overflow
  EXPECT_EQ(b.folded(), 6u);
  EXPECT_TRUE(b.keeps("heavy", 1));
  EXPECT_FALSE(b.keeps("light", 1));
}

TEST(SeriesBudget, ACandidateLessThanTwiceAsHeavyDoesNotSwap) {
  SeriesBudget<std::string> b(2);
  b.keeps("a", 10);
  b.keeps("b", 10);
  b.keeps("c", 19);  // under 2 x 10: no churn between near equals
  EXPECT_TRUE(b.rebalance().empty());
  EXPECT_TRUE(b.contains("a"));
  EXPECT_TRUE(b.contains("b"));
}

TEST(SeriesBudget, EndlessNewKeysNeitherDisplaceSteadyKeysNorGrowMemory) {
  // An agent that puts a request id in a stage name: every key new, each light. The steady
  // keys keep their series, and the candidates table never outgrows the capacity.
  SeriesBudget<std::string> b(4);
  int unique = 0;
  for (int period = 0; period < 20; ++period) {
    for (int k = 0; k < 4; ++k) b.keeps("steady-" + std::to_string(k), 100);
    for (int i = 0; i < 5000; ++i) b.keeps("req-" + std::to_string(unique++), 1);
    EXPECT_TRUE(b.rebalance().empty()) << "period " << period;
    EXPECT_LE(b.candidates(), b.capacity());
  }
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(b.contains("steady-" + std::to_string(k)));
  EXPECT_EQ(b.folded(), 20u * 5000u);
}

TEST(SeriesBudget, AKeyThatStoppedLosesItsSeriesToOneThatKeepsGoing) {
  // Weights halve at each rebalance: a key heavy long ago gives way to one heavy now.
  SeriesBudget<std::string> b(1);
  b.keeps("old", 1000);
  int periods = 0;
  while (b.contains("old") && periods < 20) {
    b.keeps("new", 50);
    b.rebalance();
    ++periods;
  }
  EXPECT_TRUE(b.contains("new"));
  EXPECT_GT(periods, 2);  // not at once: "old" was twenty times heavier
  EXPECT_LT(periods, 20);
}

TEST(SeriesBudget, ACapacityOfZeroFoldsEverything) {
  SeriesBudget<std::string> b(0);
  EXPECT_FALSE(b.keeps("a", 1));
  EXPECT_TRUE(b.rebalance().empty());
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace tailcause::core
