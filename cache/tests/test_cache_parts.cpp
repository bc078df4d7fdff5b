// SPDX-License-Identifier: Apache-2.0
// The cache's parts on their own: quotas, admission sketch, warm-up planning, locality, the
// vector checks and dot products, the semantic index's two walks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <unistd.h>

#include "tailcause/cache/admission.h"
#include "tailcause/cache/locality.h"
#include "tailcause/cache/quota.h"
#include "tailcause/cache/semantic_index.h"
#include "tailcause/cache/vector_check.h"
#include "tailcause/cache/warmup.h"
#include "test_helpers.h"

namespace tailcause::cache {
namespace {

using test::at_cosine;
using test::random_vector;

TEST(Quota, FloorCeilingAndTheLinearParts) {
  EXPECT_EQ(target_quota(1000, 1.0), 200u);   // floor: 20% of the base
  EXPECT_EQ(target_quota(1000, 0.0), 3000u);  // ceiling: 3x
  EXPECT_EQ(target_quota(1000, 0.3), 1000u);  // the boundary keeps the base
  EXPECT_EQ(target_quota(1000, 0.15), 2000u);
  EXPECT_EQ(target_quota(1000, 0.65), 600u);
  EXPECT_THROW(target_quota(1000, -0.1), std::invalid_argument);
  EXPECT_THROW(target_quota(1000, 1.1), std::invalid_argument);
}

TEST(Quota, GrowthIsCappedByTheBudget) {
  auto q = balance_quotas({{1000, 0.0}, {1000, 0.0}, {1000, 1.0}}, 3000);
  // Shrinking one frees 800; the two growers share it equally.
  EXPECT_EQ(q, (std::vector<uint64_t>{1400, 1400, 200}));
  EXPECT_EQ(balance_quotas({{1000, 0.0}}, 10'000), std::vector<uint64_t>{3000});
}

TEST(Admission, OneOffsNeverOutrankRepeatedKeys) {
  FrequencySketch s(1024);
  for (int i = 0; i < 5; ++i) s.record(42);
  s.record(7);
  EXPECT_EQ(s.estimate(99), 0u);
  EXPECT_EQ(s.estimate(7), 1u);  // the doorkeeper only
  EXPECT_GE(s.estimate(42), 5u);
  EXPECT_TRUE(s.admit(42, 7));
  EXPECT_FALSE(s.admit(7, 42));
  EXPECT_FALSE(s.admit(7, 7));  // ties keep the resident
}

TEST(Admission, CountsAgeAway) {
  FrequencySketch s(64);  // resets after 640 accesses
  for (int i = 0; i < 10; ++i) s.record(1);
  const uint32_t before = s.estimate(1);
  for (int i = 0; i < 640; ++i) s.record(1000 + i);
  EXPECT_LT(s.estimate(1), before);
}

TEST(Warmup, GroupsTopPatternsAtCosine082) {
  const std::size_t dim = 32;
  PatternLog log;
  auto a = random_vector(dim, 1), b = random_vector(dim, 2);
  auto near_a = at_cosine(a, 0.9, 10);  // joins a's group
  auto far_a = at_cosine(a, 0.7, 11);   // its own group
  for (int i = 0; i < 5; ++i) log.record(1, a);
  for (int i = 0; i < 4; ++i) log.record(2, near_a);
  for (int i = 0; i < 3; ++i) log.record(3, b);
  for (int i = 0; i < 2; ++i) log.record(4, far_a);
  auto groups = plan_warmup(log);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].members, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(groups[1].members, std::vector<uint64_t>{3});
  EXPECT_EQ(groups[2].members, std::vector<uint64_t>{4});
  // Centre: the normalised mean of a and near_a; its nearest patterns: those two, then far_a.
  ASSERT_EQ(groups[0].neighbours.size(), 3u);
  EXPECT_EQ(std::set<uint64_t>(groups[0].neighbours.begin(), groups[0].neighbours.begin() + 2),
            (std::set<uint64_t>{1, 2}));
  EXPECT_NEAR(dot(groups[0].centre.data(), groups[0].centre.data(), dim), 1.0, 1e-5);
}

TEST(Warmup, OnlyTheTop50AndTheSeeds) {
  PatternLog log;
  for (uint64_t k = 0; k < 80; ++k)
    for (uint64_t i = 0; i <= k; ++i) log.record(k, random_vector(16, k));
  std::size_t members = 0;
  for (const auto& g : plan_warmup(log)) {
    members += g.members.size();
    for (uint64_t m : g.members) EXPECT_GE(m, 30u);  // the 50 most frequent: 30..79
  }
  EXPECT_EQ(members, 50u);
  auto seeded = plan_warmup(log, {3, 5});
  std::size_t n = 0;
  for (const auto& g : seeded) n += g.members.size();
  EXPECT_EQ(n, 2u);
}

TEST(Warmup, RiseBy200PercentAndBatchSizes) {
  PatternLog log;
  auto a = random_vector(8, 1), b = random_vector(8, 2);
  for (int i = 0; i < 2; ++i) log.record(1, a);
  for (int i = 0; i < 3; ++i) log.record(2, b);
  EXPECT_EQ(log.roll_window(), std::vector<uint64_t>{2});  // new and >= 3
  for (int i = 0; i < 6; ++i) log.record(1, a);            // 2 -> 6: +200%
  for (int i = 0; i < 8; ++i) log.record(2, b);            // 3 -> 8: +167%
  EXPECT_EQ(log.roll_window(), std::vector<uint64_t>{1});
  EXPECT_EQ(warmup_batch_size(100 * 10, 10), 64u);
  EXPECT_EQ(warmup_batch_size(30 * 10, 10), 30u);
  EXPECT_EQ(warmup_batch_size(16 * 10 + 9, 10), 16u);
  EXPECT_EQ(warmup_batch_size(3 * 10, 10), 3u);
  EXPECT_EQ(warmup_batch_size(9, 10), 0u);
}

TEST(Warmup, ARisingTopicOfParaphrasesIsOneRise) {
  const std::size_t dim = 32;
  PatternLog log;
  auto steady = random_vector(dim, 1), trending = random_vector(dim, 2);
  uint64_t key = 100;
  for (int i = 0; i < 5; ++i) log.record(key++, at_cosine(steady, 0.95, 10 + i));
  log.roll_window();
  std::vector<uint64_t> expected;
  for (int i = 0; i < 5; ++i) log.record(key++, at_cosine(steady, 0.95, 20 + i));
  for (int i = 0; i < 6; ++i) {
    expected.push_back(key);
    log.record(key++, at_cosine(trending, 0.95, 30 + i));  // each key seen once
  }
  EXPECT_EQ(log.roll_window(), expected);  // the steady topic's new paraphrases are no rise
}

TEST(Locality, CoAccessedChunksFormConnectedGroups) {
  CoAccessTracker t;
  const uint64_t w = kCoAccessWindowNs;
  // Chunks 5, 9, 2 read together in 10 windows; 9 and 40 together in 9 of 10 (a chain);
  // 7 with 5 in 3 of 10 windows only (ratio 0.3); 100 and 101 each alone.
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t t0 = i * w * 2;
    t.record(5, t0);
    t.record(9, t0 + 10);
    t.record(2, t0 + 20);
    if (i < 9) t.record(40, t0 + 30);
    if (i < 3) t.record(7, t0 + 40);
    t.record(100 + (i % 2), t0 + w + 5);  // the next window
  }
  t.flush();
  EXPECT_DOUBLE_EQ(t.ratio(5, 9), 1.0);
  EXPECT_DOUBLE_EQ(t.ratio(9, 40), 0.9);
  EXPECT_DOUBLE_EQ(t.ratio(5, 7), 0.3);
  auto g = t.groups();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], (std::vector<uint32_t>{2, 5, 9, 40}));
  auto order = layout_order(50, g);
  EXPECT_EQ(std::vector<uint32_t>(order.begin(), order.begin() + 5),
            (std::vector<uint32_t>{2, 5, 9, 40, 0}));
  EXPECT_EQ(order.size(), 50u);
}

TEST(Locality, WriteLayoutPutsGroupsContiguously) {
  const std::size_t dim = 4, n = 6;
  std::vector<float> rows(n * dim);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i / dim);
  std::vector<uint32_t> order = layout_order(n, {{1, 4}});
  char path[] = "/tmp/tc_layout_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  write_layout(path, rows, dim, order);
  std::ifstream in(path, std::ios::binary);
  std::vector<float> got(n * dim);
  in.read(reinterpret_cast<char*>(got.data()), got.size() * sizeof(float));
  std::remove(path);
  std::vector<float> firsts;
  for (std::size_t r = 0; r < n; ++r) firsts.push_back(got[r * dim]);
  EXPECT_EQ(firsts, (std::vector<float>{1, 4, 0, 2, 3, 5}));
  EXPECT_THROW(write_layout(path, rows, dim, {0, 0, 1, 2, 3, 4}), std::invalid_argument);
  EXPECT_THROW(write_layout("/nonexistent/dir/x", rows, dim, order), std::runtime_error);
}

TEST(VectorCheck, NamesTheBadComponentWhereverItIsAndKeepsExtremeFiniteValues) {
  for (const std::size_t dim : {std::size_t{3}, std::size_t{8}, std::size_t{13}}) {
    for (std::size_t at = 0; at < dim; ++at) {
      for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
        std::vector<float> v(dim, 0.25f);
        v[at] = bad;
        try {
          normalized_or_throw(v, dim);
          ADD_FAILURE() << "no error for component " << at << " of " << dim;
        } catch (const BadVector& e) {
          const std::string want = "vector component " + std::to_string(at) + " is " +
                                   (std::isnan(bad) ? "NaN" : "infinite");
          EXPECT_EQ(e.what(), want);
        }
      }
    }
  }
  // The largest and the smallest finite floats still normalise (their squares fit a double).
  std::vector<float> big(13, 3e38f), tiny(13, 1e-44f);
  for (const auto& v : {big, tiny}) {
    const auto u = normalized_or_throw(v, v.size());
    EXPECT_NEAR(dot(u.data(), u.data(), u.size()), 1.0f, 1e-5f);
  }
  // A buffer reused for a shorter or longer vector takes its size.
  std::vector<float> out(50, 9.0f);
  normalize_into(std::vector<float>{3, 4}, 2, out);
  EXPECT_EQ(out, (std::vector<float>{0.6f, 0.8f}));
}

TEST(VectorCheck, Int8DotIsExactAtEveryLength) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> c(-127, 127);
  for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 255u, 256u, 1000u}) {
    std::vector<int8_t> a(n), b(n);
    int32_t want = 0;
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<int8_t>(c(rng)), b[i] = static_cast<int8_t>(c(rng));
      want += int32_t{a[i]} * b[i];
    }
    EXPECT_EQ(dot_i8(a.data(), b.data(), n), want) << n;
  }
  std::vector<int8_t> m(4096, -127);  // the largest magnitude, every lane
  EXPECT_EQ(dot_i8(m.data(), m.data(), m.size()), 4096 * 127 * 127);
}

// The exact key's grid: the vector path (AVX2 here) and the tail loop round as nearbyint does,
// ties to even included, at every length.
TEST(VectorCheck, QuantiseToGridRoundsToNearestTiesToEven) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 31u, 256u, 1001u}) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    // Exact ties (k + 0.5 grid steps) in every lane and the tail, both signs.
    for (std::size_t i = 0; i < n; i += 3) v[i] = (static_cast<float>(i % 41) - 20.5f) / 1024;
    std::vector<int32_t> got(n + 1, 12345);
    quantise_to_grid(v.data(), n, 1024, got.data());
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], static_cast<int32_t>(std::nearbyint(v[i] * 1024))) << n << " " << i;
    EXPECT_EQ(got[n], 12345) << "wrote past the end";
  }
  const float ties[] = {
      0.5f / 1024, 1.5f / 1024, -0.5f / 1024, -1.5f / 1024, 2.5f / 1024, -2.5f / 1024, 0, 0, 0};
  int32_t q[9];
  quantise_to_grid(ties, 9, 1024, q);
  EXPECT_EQ(std::vector<int32_t>(q, q + 6), (std::vector<int32_t>{0, 2, 0, -2, 2, -2}));
}

// Both walks (int8 copies with the candidates ranked again, and float) find the exact nearest
// neighbour of clustered queries, and the match's similarity is the exact float cosine.
TEST(SemanticIndex, BothWalksFindTheExactNearestWithItsExactSimilarity) {
  constexpr std::size_t kDim = 64, kEntries = 3000;
  std::vector<std::vector<float>> stored;
  for (std::size_t i = 0; i < kEntries; ++i)
    stored.push_back(test::at_cosine(test::random_vector(kDim, i % 60), 0.8, 1000 + i));
  for (bool quantized : {true, false}) {
    IndexParams p;
    p.quantized = quantized;
    SemanticIndex index(kDim, p);
    for (std::size_t i = 0; i < kEntries; ++i) index.add(i, stored[i]);
    std::size_t right = 0;
    for (uint64_t q = 0; q < 300; ++q) {
      const auto query = test::at_cosine(stored[(q * 7919) % kEntries], 0.9, 50000 + q);
      uint64_t best = 0;
      float best_s = -2;
      for (std::size_t i = 0; i < kEntries; ++i) {
        const float s = dot(query.data(), stored[i].data(), kDim);
        if (s > best_s) best_s = s, best = i;
      }
      const auto m = index.nearest(query);
      ASSERT_TRUE(m);
      EXPECT_EQ(m->similarity, dot(query.data(), stored[m->label].data(), kDim));
      right += m->label == best;
    }
    EXPECT_GE(right, 285u) << (quantized ? "int8" : "float") << " walk, recall@1 " << right / 300.0;
  }
}

}  // namespace
}  // namespace tailcause::cache
