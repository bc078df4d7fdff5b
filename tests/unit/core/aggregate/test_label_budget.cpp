// SPDX-License-Identifier: Apache-2.0
// LabelBudget (top-K admission, sticky, folding into "__other__") and FoldedSeries (keeps
// exported counters monotonic while series are folded, vanish and come back).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "core/aggregate/label_budget.h"

using namespace tailcause::core;

namespace {

// A histogram-like value: what a probe folds for latency series.
struct Hist {
  std::array<uint64_t, 4> slots{};
  uint64_t sum = 0;
  Hist& operator+=(const Hist& o) {
    for (size_t i = 0; i < slots.size(); ++i) slots[i] += o.slots[i];
    sum += o.sum;
    return *this;
  }
  bool operator==(const Hist&) const = default;
  uint64_t count() const { return slots[0] + slots[1] + slots[2] + slots[3]; }
};

Hist hist(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t sum) {
  return Hist{{a, b, c, d}, sum};
}

// Every slot and the sum must not decrease between two scrapes of one series.
bool monotonic(const Hist& before, const Hist& after) {
  for (size_t i = 0; i < before.slots.size(); ++i) {
    if (after.slots[i] < before.slots[i]) return false;
  }
  return after.sum >= before.sum;
}

}  // namespace

// ---- LabelBudget ----------------------------------------------------------------------

TEST(LabelBudget, AdmitsTheFirstKValuesAndFoldsTheRest) {
  LabelBudget b(2);
  EXPECT_EQ(b.admit("/a"), "/a");
  EXPECT_EQ(b.admit("/b"), "/b");
  EXPECT_EQ(b.admit("/c"), kOtherLabel);
  EXPECT_EQ(b.admit("/d"), kOtherLabel);
  EXPECT_EQ(b.admitted(), 2u);
  EXPECT_EQ(b.capacity(), 2u);
  EXPECT_EQ(b.folded(), 2u);
}

TEST(LabelBudget, AdmissionIsSticky) {
  LabelBudget b(2);
  b.admit("/a");
  b.admit("/c");
  EXPECT_EQ(b.admit("/z"), kOtherLabel);
  // Seen again and again, in any order: an admitted value never folds, a folded one never
  // gets its own series.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(b.admit("/z"), kOtherLabel);
    EXPECT_EQ(b.admit("/c"), "/c");
    EXPECT_EQ(b.admit("/a"), "/a");
  }
  EXPECT_EQ(b.admitted(), 2u);
}

TEST(LabelBudget, EndlessNewValuesKeepItsMemoryBounded) {
  LabelBudget b(1);
  EXPECT_EQ(b.admit("kept"), "kept");
  for (int i = 0; i < 3 * static_cast<int>(LabelBudget::kMaxRememberedFolds); ++i) {
    EXPECT_EQ(b.admit("request-" + std::to_string(i)), kOtherLabel);
    ASSERT_LE(b.remembered_folds(), LabelBudget::kMaxRememberedFolds);
  }
  EXPECT_EQ(b.admit("kept"), "kept");
  EXPECT_EQ(b.folded(), 3 * LabelBudget::kMaxRememberedFolds);
}

TEST(LabelBudget, FoldedCountsDistinctValues) {
  LabelBudget b(1);
  b.admit("/a");
  EXPECT_EQ(b.folded(), 0u);
  for (int i = 0; i < 5; ++i) b.admit("/b");
  EXPECT_EQ(b.folded(), 1u);
  b.admit("/c");
  b.admit("/b");
  b.admit("/a");
  EXPECT_EQ(b.folded(), 2u);
}

TEST(LabelBudget, ForgetFreesASlotForANewValueOnly) {
  LabelBudget b(2);
  b.admit("/a");
  b.admit("/b");
  EXPECT_EQ(b.admit("/folded"), kOtherLabel);
  b.forget("/a");
  EXPECT_EQ(b.admitted(), 1u);
  // A value folded while it existed stays folded; the freed slot goes to a new value.
  EXPECT_EQ(b.admit("/folded"), kOtherLabel);
  EXPECT_EQ(b.admit("/new"), "/new");
  EXPECT_EQ(b.admit("/a"), kOtherLabel);  // /a came back after its slot was taken
  EXPECT_EQ(b.admitted(), 2u);
  b.forget("/never-seen");  // harmless
  EXPECT_EQ(b.admitted(), 2u);
}

TEST(LabelBudget, ForgettingAFoldedValueKeepsTheCountAndFreesIt) {
  // Cgroups come and go by the thousand: forgetting removed ones must not lose the count of
  // values folded so far (a monotonic self-metric), and a removed then re-created cgroup is a
  // new value that can take a free slot.
  LabelBudget b(1);
  b.admit("/kept");
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "/pod-" + std::to_string(i);
    EXPECT_EQ(b.admit(name), kOtherLabel);
    b.forget(name);
  }
  EXPECT_EQ(b.folded(), 1000u);
  b.forget("/kept");
  EXPECT_EQ(b.admit("/pod-7"), "/pod-7");
  EXPECT_EQ(b.folded(), 1000u);
}

TEST(LabelBudget, ALiteralOtherValueTakesNoSlot) {
  LabelBudget b(1);
  EXPECT_EQ(b.admit(kOtherLabel), kOtherLabel);
  EXPECT_EQ(b.admitted(), 0u);
  EXPECT_EQ(b.admit("/a"), "/a");
}

TEST(LabelBudget, ZeroCapacityFoldsEverything) {
  LabelBudget b(0);
  EXPECT_EQ(b.admit("/a"), kOtherLabel);
  EXPECT_EQ(b.admitted(), 0u);
  EXPECT_EQ(b.folded(), 1u);
}

// ---- FoldedSeries ---------------------------------------------------------------------

TEST(FoldedSeries, AdmittedSeriesPassThroughAndTheRestSumIntoOther) {
  LabelBudget b(2);
  FoldedSeries<uint64_t> fs(b);
  auto out = fs.fold({{"/a", 10}, {"/b", 20}, {"/c", 5}, {"/d", 7}});
  EXPECT_EQ(out, (std::map<std::string, uint64_t>{{"/a", 10}, {"/b", 20}, {kOtherLabel, 12}}));
}

TEST(FoldedSeries, NoOtherSeriesUntilSomethingFolds) {
  LabelBudget b(3);
  FoldedSeries<uint64_t> fs(b);
  auto out = fs.fold({{"/a", 1}, {"/b", 2}});
  EXPECT_EQ(out.count(kOtherLabel), 0u);
  EXPECT_EQ(out.size(), 2u);
}

TEST(FoldedSeries, OtherStaysMonotonicWhenAFoldedSeriesDisappears) {
  LabelBudget b(1);
  FoldedSeries<Hist> fs(b);
  auto first = fs.fold(
      {{"/a", hist(1, 0, 0, 0, 1)}, {"/b", hist(2, 3, 0, 0, 9)}, {"/c", hist(0, 1, 4, 0, 30)}});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[kOtherLabel], hist(2, 4, 4, 0, 39));
  // /b is gone (its cgroup was removed); /c keeps counting.
  auto second = fs.fold({{"/a", hist(1, 0, 0, 0, 1)}, {"/c", hist(0, 1, 5, 1, 40)}});
  EXPECT_EQ(second[kOtherLabel], hist(2, 4, 5, 1, 49));
  EXPECT_TRUE(monotonic(first[kOtherLabel], second[kOtherLabel]));
  // Every folded series gone: __other__ keeps its last total and is still exported.
  auto third = fs.fold({{"/a", hist(2, 0, 0, 0, 2)}});
  ASSERT_EQ(third.count(kOtherLabel), 1u);
  EXPECT_EQ(third[kOtherLabel], hist(2, 4, 5, 1, 49));
  EXPECT_EQ(third["/a"], hist(2, 0, 0, 0, 2));
}

TEST(FoldedSeries, OtherNeverDisappearsOnceExported) {
  LabelBudget b(1);
  FoldedSeries<uint64_t> fs(b);
  fs.fold({{"/a", 1}, {"/b", 4}});
  for (int i = 0; i < 3; ++i) {
    auto out = fs.fold({});
    ASSERT_EQ(out.count(kOtherLabel), 1u) << "scrape " << i;
    EXPECT_EQ(out[kOtherLabel], 4u);
  }
}

TEST(FoldedSeries, AFoldedSeriesNeverMovesToItsOwnSeries) {
  LabelBudget b(1);
  FoldedSeries<uint64_t> fs(b);
  fs.fold({{"/a", 1}, {"/b", 2}});
  b.forget("/a");  // /a removed: a slot is free
  auto out = fs.fold({{"/b", 3}});
  EXPECT_EQ(out.count("/b"), 0u);
  EXPECT_EQ(out[kOtherLabel], 3u);
}

TEST(FoldedSeries, ARecreatedFoldedValueStartsAFreshSeriesAndOtherKeepsItsPast) {
  LabelBudget b(1);
  FoldedSeries<uint64_t> fs(b);
  auto first = fs.fold({{"/a", 1}, {"/b", 50}});
  EXPECT_EQ(first[kOtherLabel], 50u);
  // Both cgroups removed; later /b is created again and its counter restarts.
  fs.fold({});
  b.forget("/a");
  b.forget("/b");
  auto again = fs.fold({{"/b", 2}});
  EXPECT_EQ(again["/b"], 2u);
  EXPECT_EQ(again[kOtherLabel], 50u);
}

TEST(FoldedSeries, ForgettingASeriesStillPresentKeepsOtherMonotonic) {
  // A probe may forget a name one scrape before its counter leaves the BPF map.
  LabelBudget b(1);
  FoldedSeries<uint64_t> fs(b);
  fs.fold({{"/a", 1}, {"/b", 10}});
  b.forget("/a");
  b.forget("/b");
  auto out = fs.fold({{"/b", 11}});
  EXPECT_GE(out[kOtherLabel], 10u);
}

TEST(FoldedSeries, ManyScrapesWithChurnNeverDecreaseAnExportedSeries) {
  // Cgroups appear and vanish across scrapes and the probe forgets the removed ones, as a
  // probe does; every exported value only grows and __other__ never vanishes.
  LabelBudget b(3);
  FoldedSeries<Hist> fs(b);
  std::map<std::string, Hist> last_exported;
  std::map<std::string, Hist> live;
  size_t own_series = 0;
  for (uint64_t scrape = 0; scrape < 60; ++scrape) {
    // Cgroup i lives for scrapes [i, i + 7]; its counters grow while it lives.
    std::map<std::string, Hist> next;
    for (uint64_t i = scrape > 7 ? scrape - 7 : 0; i <= scrape; ++i) {
      const uint64_t age = scrape - i + 1;
      next["/cg" + std::to_string(i)] = hist(age, 2 * age, 0, i % 2 ? age : 0, 10 * age);
    }
    for (const auto& [name, _] : live) {
      if (!next.count(name)) b.forget(name);
    }
    live = std::move(next);
    auto out = fs.fold(live);
    EXPECT_LE(out.size(), b.capacity() + 1);
    for (const auto& [name, value] : out) {
      auto it = last_exported.find(name);
      if (it != last_exported.end()) {
        EXPECT_TRUE(monotonic(it->second, value)) << name << " at scrape " << scrape;
      } else if (name != kOtherLabel) {
        ++own_series;
      }
      last_exported[name] = value;
    }
    if (last_exported.count(kOtherLabel)) {
      EXPECT_EQ(out.count(kOtherLabel), 1u) << "scrape " << scrape;
    }
  }
  EXPECT_GT(own_series, 3u);  // freed slots were reused by later cgroups
  EXPECT_EQ(last_exported.count(kOtherLabel), 1u);
}
