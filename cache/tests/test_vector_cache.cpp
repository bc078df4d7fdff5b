// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>

#include "tailcause/cache/exact_key.h"
#include "tailcause/cache/vector_cache.h"
#include "tailcause/cache/vector_check.h"
#include "test_helpers.h"

namespace tailcause::cache {
namespace {

using test::at_cosine;
using test::FakeClock;
using test::random_vector;

constexpr std::size_t kDim = 64;

CacheOptions options(const FakeClock& clock) {
  CacheOptions o;
  o.dim = kDim;
  o.threshold = 0.9f;
  o.ttl = std::chrono::seconds(10);
  o.clock = clock.fn();
  return o;
}

TEST(VectorCache, FloatNoiseGivesTheSameExactKey) {
  auto v = random_vector(kDim, 1);
  auto noisy = v;
  for (auto& x : noisy) x *= 1.0000001f;  // a different scale and rounding, same direction
  noisy[3] += 1e-7f;
  EXPECT_EQ(exact_key("v1", normalized_or_throw(v, kDim), 1.0f / 1024),
            exact_key("v1", normalized_or_throw(noisy, kDim), 1.0f / 1024));
  EXPECT_NE(exact_key("v1", normalized_or_throw(v, kDim), 1.0f / 1024),
            exact_key("v2", normalized_or_throw(v, kDim), 1.0f / 1024));
}

// Every component counts, wherever it falls in the key's lanes and padding, at every length.
TEST(VectorCache, ExactKeyTellsAnyComponentApartAtEveryLength) {
  for (std::size_t n : {1u, 2u, 15u, 16u, 17u, 33u, 256u}) {
    auto v = normalized_or_throw(random_vector(n, 11), n);
    const uint64_t key = exact_key("v1", v, 1.0f / 1024);
    EXPECT_EQ(exact_key("v1", v, 1.0f / 1024), key);
    std::set<uint64_t> seen{key};
    for (std::size_t i = 0; i < n; ++i) {
      auto w = v;
      w[i] += 2.0f / 1024;  // two grid steps: another grid point
      EXPECT_TRUE(seen.insert(exact_key("v1", w, 1.0f / 1024)).second) << n << " " << i;
    }
    // A vector of zeros past the end is another vector: the length is in the key.
    auto longer = v;
    longer.push_back(0);
    EXPECT_NE(exact_key("v1", longer, 1.0f / 1024), key) << n;
    // The 64-bit grid (a step finer than 2^-30) keys it too.
    EXPECT_EQ(exact_key("v1", v, 1e-10f), exact_key("v1", v, 1e-10f));
    EXPECT_NE(exact_key("v1", v, 1e-10f), key);
  }
}

TEST(VectorCache, ExactHitReturnsValueAndAge) {
  FakeClock clock;
  VectorCache c(options(clock));
  auto v = random_vector(kDim, 1);
  EXPECT_EQ(c.lookup("a", v).result, LookupResult::Miss);
  EXPECT_EQ(c.insert("a", v, "docs"), InsertResult::Stored);
  clock.advance_s(2);
  auto r = c.lookup("a", v);
  ASSERT_EQ(r.result, LookupResult::Hit);
  EXPECT_FALSE(r.semantic);
  EXPECT_EQ(*r.value, "docs");
  EXPECT_EQ(r.age_ns, 2'000'000'000u);
  // Tenants are apart.
  EXPECT_EQ(c.lookup("b", v).result, LookupResult::Miss);
}

TEST(VectorCache, SemanticHitAndMissAtTheThreshold) {
  FakeClock clock;
  VectorCache c(options(clock));
  auto v = random_vector(kDim, 7);
  c.insert("a", v, "docs");
  auto above = c.lookup("a", at_cosine(v, 0.92, 100));
  EXPECT_EQ(above.result, LookupResult::Hit);
  EXPECT_TRUE(above.semantic);
  EXPECT_NEAR(above.similarity, 0.92, 1e-4);
  EXPECT_EQ(c.lookup("a", at_cosine(v, 0.88, 101)).result, LookupResult::Miss);
  auto s = c.stats("a");
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.semantic_hits, 1u);
  EXPECT_EQ(s.misses, 1u);
}

TEST(VectorCache, SemanticOffMeansExactOnly) {
  FakeClock clock;
  auto o = options(clock);
  o.semantic = false;
  VectorCache c(o);
  auto v = random_vector(kDim, 7);
  c.insert("a", v, "docs");
  EXPECT_EQ(c.lookup("a", at_cosine(v, 0.99, 100)).result, LookupResult::Miss);
  EXPECT_EQ(c.lookup("a", v).result, LookupResult::Hit);
}

TEST(VectorCache, OlderThanTtlIsStaleThenRefreshed) {
  FakeClock clock;
  VectorCache c(options(clock));
  auto v = random_vector(kDim, 3);
  c.insert("a", v, "old");
  clock.advance_s(11);
  auto r = c.lookup("a", v);
  EXPECT_EQ(r.result, LookupResult::Stale);
  EXPECT_FALSE(r.value);
  EXPECT_EQ(r.age_ns, 11'000'000'000u);
  EXPECT_EQ(c.insert("a", v, "new"), InsertResult::Updated);
  r = c.lookup("a", v);
  EXPECT_EQ(r.result, LookupResult::Hit);
  EXPECT_EQ(*r.value, "new");
  EXPECT_EQ(r.age_ns, 0u);
}

// A stale neighbour does not hide a fresh one a little farther away (found by the benchmark on
// the example agent's traffic, bench/README.md): the fresh one is the hit.
TEST(VectorCache, SemanticLookupPrefersAFreshEntryToANearerStaleOne) {
  FakeClock clock;
  VectorCache c(options(clock));  // threshold 0.9, TTL 10 s
  auto q = random_vector(kDim, 21);
  c.insert("a", at_cosine(q, 0.98, 22), "old");
  clock.advance_s(11);
  c.insert("a", at_cosine(q, 0.93, 23), "fresh");
  auto r = c.lookup("a", q);
  ASSERT_EQ(r.result, LookupResult::Hit);
  EXPECT_EQ(*r.value, "fresh");
  EXPECT_NEAR(r.similarity, 0.93, 1e-4);
  // With only stale ones in reach, the nearest is reported stale, its age the staleness.
  clock.advance_s(11);
  r = c.lookup("a", q);
  EXPECT_EQ(r.result, LookupResult::Stale);
  EXPECT_NEAR(r.similarity, 0.98, 1e-4);
  EXPECT_EQ(r.age_ns, 22'000'000'000u);
}

// A stale lookup does not move its entry up the LRU order, and admission lets a newcomer push
// out an expired entry however popular it was.
TEST(VectorCache, ExpiredEntriesAreTheFirstToGo) {
  FakeClock clock;
  auto o = options(clock);
  o.base_quota_bytes = VectorCache(o).entry_bytes(1) * 2;
  for (bool admission : {false, true}) {
    o.admission = admission;
    VectorCache c(o);
    auto popular = random_vector(kDim, 31), recent = random_vector(kDim, 32);
    for (int k = 0; k < 8; ++k) c.lookup("a", popular);  // asked for again and again
    c.insert("a", popular, "p");
    clock.advance_s(6);
    c.insert("a", recent, "r");
    clock.advance_s(6);  // popular is 12 s old (expired), recent 6 s
    EXPECT_EQ(c.lookup("a", popular).result, LookupResult::Stale);
    // A one-off newcomer: the expired entry goes, not the fresh one.
    EXPECT_EQ(c.insert("a", random_vector(kDim, 33), "n"), InsertResult::Stored) << admission;
    EXPECT_EQ(c.lookup("a", recent).result, LookupResult::Hit) << admission;
    EXPECT_EQ(c.lookup("a", popular).result, LookupResult::Miss) << admission;
    EXPECT_EQ(c.stats("a").evicted, 1u) << admission;
  }
}

TEST(VectorCache, ModelVersionChangeInvalidatesAndCounts) {
  FakeClock clock;
  VectorCache c(options(clock));
  for (int i = 0; i < 5; ++i) c.insert("a", random_vector(kDim, i), "x");
  c.insert("b", random_vector(kDim, 99), "y");
  c.set_model_version("v2");
  EXPECT_EQ(c.stats("a").invalidated, 5u);
  EXPECT_EQ(c.stats("b").invalidated, 1u);
  EXPECT_EQ(c.stats("a").entries, 0u);
  EXPECT_EQ(c.stats("a").usage_bytes, 0u);
  EXPECT_EQ(c.lookup("a", random_vector(kDim, 0)).result, LookupResult::Miss);
  c.set_model_version("v2");  // the same version: nothing more
  EXPECT_EQ(c.stats("a").invalidated, 5u);
}

TEST(VectorCache, BadInputIsAClearErrorAndStoresNothing) {
  FakeClock clock;
  VectorCache c(options(clock));
  auto nan = random_vector(kDim, 1);
  nan[5] = std::nanf("");
  EXPECT_THROW(
      {
        try {
          c.insert("a", nan, "x");
        } catch (const BadVector& e) {
          EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos);
          throw;
        }
      },
      BadVector);
  std::vector<float> zero(kDim, 0);
  EXPECT_THROW(c.insert("a", zero, "x"), BadVector);
  EXPECT_THROW(c.lookup("a", zero), BadVector);
  auto inf = random_vector(kDim, 1);
  inf[0] = INFINITY;
  EXPECT_THROW(c.lookup("a", inf), BadVector);
  EXPECT_THROW(c.insert("a", random_vector(kDim + 1, 1), "x"), BadVector);
  EXPECT_THROW(c.insert("", random_vector(kDim, 1), "x"), std::invalid_argument);
  EXPECT_THROW(c.insert(std::string(65, 't'), random_vector(kDim, 1), "x"), std::invalid_argument);
  EXPECT_THROW(c.set_competition("a", 1.5), std::invalid_argument);
  EXPECT_THROW(c.set_competition("a", std::nan("")), std::invalid_argument);
  // Nothing stored and no tenant left behind by a bad vector.
  EXPECT_TRUE(c.tenants().empty() || c.stats("a").entries == 0);
  CacheOptions bad;
  EXPECT_THROW(VectorCache{bad}, std::invalid_argument);
}

TEST(VectorCache, AdmissionKeepsFrequentEntriesAgainstABurstOfOneOffs) {
  FakeClock clock;
  auto o = options(clock);
  VectorCache probe(o);
  const uint64_t per_entry = probe.entry_bytes(4);
  o.base_quota_bytes = per_entry * 10;
  VectorCache with(o);
  o.admission = false;
  VectorCache without(o);
  for (VectorCache* c : {&with, &without}) {
    // Ten hot entries, each asked for several times.
    for (int i = 0; i < 10; ++i) {
      auto v = random_vector(kDim, i);
      for (int k = 0; k < 4; ++k) c->lookup("a", v);
      c->insert("a", v, "hot!");
    }
    // A burst of 200 one-off queries, each looked up once and stored after its miss.
    for (int i = 0; i < 200; ++i) {
      auto v = random_vector(kDim, 1000 + i);
      c->lookup("a", v);
      c->insert("a", v, "one!");
    }
  }
  auto hot_hits = [](VectorCache& c) {
    int n = 0;
    for (int i = 0; i < 10; ++i)
      n += c.lookup("a", random_vector(kDim, i)).result == LookupResult::Hit;
    return n;
  };
  EXPECT_EQ(hot_hits(with), 10);
  EXPECT_EQ(hot_hits(without), 0);
  EXPECT_EQ(with.stats("a").rejected, 200u);
  EXPECT_LE(with.stats("a").usage_bytes, with.stats("a").quota_bytes);
}

TEST(VectorCache, LruEvictsTheLeastRecentlyUsed) {
  FakeClock clock;
  auto o = options(clock);
  o.admission = false;
  o.base_quota_bytes = VectorCache(o).entry_bytes(1) * 3;
  VectorCache c(o);
  for (int i = 0; i < 3; ++i) c.insert("a", random_vector(kDim, i), "x");
  c.lookup("a", random_vector(kDim, 0));  // 0 is now the most recent; 1 the least
  c.insert("a", random_vector(kDim, 3), "x");
  EXPECT_EQ(c.lookup("a", random_vector(kDim, 1)).result, LookupResult::Miss);
  EXPECT_EQ(c.lookup("a", random_vector(kDim, 0)).result, LookupResult::Hit);
  EXPECT_EQ(c.stats("a").evicted, 1u);
}

TEST(VectorCache, QuotasFollowCompetitionEveryPeriod) {
  FakeClock clock;
  auto o = options(clock);
  o.admission = false;
  const uint64_t entry = VectorCache(o).entry_bytes(1);
  o.base_quota_bytes = entry * 100;
  VectorCache c(o);
  for (int i = 0; i < 100; ++i) c.insert("noisy", random_vector(kDim, i), "x");
  for (int i = 0; i < 10; ++i) c.insert("quiet", random_vector(kDim, 500 + i), "x");
  c.insert("third", random_vector(kDim, 900), "x");
  c.set_competition("noisy", 1.0);  // its misses come from others: floor
  c.set_competition("quiet", 0.0);  // may grow to 3x ...
  c.set_competition("third", 0.3);  // stays at its base
  EXPECT_FALSE(c.maintain());       // no period has passed yet
  EXPECT_EQ(c.stats("noisy").quota_bytes, entry * 100);
  clock.advance_s(5);
  EXPECT_TRUE(c.maintain());
  auto noisy = c.stats("noisy"), quiet = c.stats("quiet"), third = c.stats("third");
  EXPECT_EQ(noisy.quota_bytes, entry * 20);
  EXPECT_LE(noisy.usage_bytes, noisy.quota_bytes);
  EXPECT_EQ(noisy.entries, 20u);
  EXPECT_EQ(noisy.evicted, 80u);
  EXPECT_EQ(third.quota_bytes, entry * 100);
  // ... within the budget (the sum of the bases): 300 - 20 - 100 = 180 of the wanted 300.
  EXPECT_EQ(quiet.quota_bytes, entry * 180);
  EXPECT_EQ(quiet.competition, 0.0);
  EXPECT_EQ(quiet.rebalances, 1u);
  // Quotas off: everyone keeps the base.
  o.quotas = false;
  VectorCache flat(o);
  flat.insert("noisy", random_vector(kDim, 1), "x");
  flat.set_competition("noisy", 1.0);
  flat.rebalance();
  EXPECT_EQ(flat.stats("noisy").quota_bytes, entry * 100);
}

TEST(VectorCache, ColdStartWarmsUpFromRecordedPatterns) {
  FakeClock clock;
  auto o = options(clock);
  VectorCache c(o);
  std::vector<std::vector<std::vector<float>>> loaded;
  c.set_loader([&](const std::string& tenant, const std::vector<std::vector<float>>& vs) {
    EXPECT_EQ(tenant, "a");
    loaded.push_back(vs);
    return std::vector<std::optional<std::string>>(vs.size(), std::string("warm"));
  });
  // 30 lookups of 3 topics, nothing ever stored: hit rate 0, a cold start.
  std::vector<std::vector<float>> topics = {random_vector(kDim, 1), random_vector(kDim, 2),
                                            random_vector(kDim, 3)};
  for (int i = 0; i < 30; ++i) c.lookup("a", at_cosine(topics[i % 3], 0.95, 100 + i));
  clock.advance_s(5);
  ASSERT_TRUE(c.maintain());
  ASSERT_EQ(loaded.size(), 1u);
  auto s = c.stats("a");
  EXPECT_EQ(s.warmups, 1u);
  // Three groups (one per topic): each centre plus its three nearest patterns.
  EXPECT_EQ(s.warmed_entries, 12u);
  for (const auto& t : topics)
    EXPECT_EQ(c.lookup("a", at_cosine(t, 0.97, 7)).result, LookupResult::Hit);
  // Not cold any more: the next window does not warm again without a rising pattern.
  clock.advance_s(5);
  c.maintain();
  EXPECT_EQ(c.stats("a").warmups, 1u);
}

TEST(VectorCache, RisingPatternTriggersWarmUp) {
  FakeClock clock;
  auto o = options(clock);
  o.cold_min_lookups = 1000;  // no cold-start warm-up in this test
  VectorCache c(o);
  std::size_t calls = 0;
  c.set_loader([&](const std::string&, const std::vector<std::vector<float>>& vs) {
    ++calls;
    return std::vector<std::optional<std::string>>(vs.size(), std::string("warm"));
  });
  auto v = random_vector(kDim, 5);
  c.lookup("a", v);
  clock.advance_s(5);
  c.maintain();
  EXPECT_EQ(calls, 0u);
  for (int i = 0; i < 4; ++i) c.lookup("a", v);  // 1 -> 4: a rise by 300%
  clock.advance_s(5);
  c.maintain();
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(c.lookup("a", v).result, LookupResult::Hit);
}

TEST(VectorCache, WarmUpFillsOnlyFreeQuota) {
  FakeClock clock;
  auto o = options(clock);
  const uint64_t entry = VectorCache(o).entry_bytes(4);
  o.base_quota_bytes = entry * 5;
  VectorCache c(o);
  std::vector<std::size_t> batches;
  c.set_loader([&](const std::string&, const std::vector<std::vector<float>>& vs) {
    batches.push_back(vs.size());
    return std::vector<std::optional<std::string>>(vs.size(), std::string("warm"));
  });
  for (int i = 0; i < 20; ++i) c.lookup("a", random_vector(kDim, i));
  EXPECT_EQ(c.warm_up("a"), 5u);
  EXPECT_EQ(c.stats("a").entries, 5u);
  for (auto b : batches) EXPECT_LE(b, 5u);
  EXPECT_LE(c.stats("a").usage_bytes, c.stats("a").quota_bytes);
}

TEST(VectorCache, MostMissedKeysAndLayoutAreReported) {
  FakeClock clock;
  VectorCache c(options(clock));
  auto hot = random_vector(kDim, 1);
  for (int i = 0; i < 5; ++i) c.lookup("a", hot);
  c.lookup("a", random_vector(kDim, 2));
  auto s = c.stats("a");
  ASSERT_GE(s.most_missed.size(), 2u);
  EXPECT_EQ(s.most_missed[0].misses, 5u);
  EXPECT_EQ(s.most_missed[0].key, c.lookup("a", hot).key);
  EXPECT_TRUE(c.layout().cache_line_aligned);  // 64 floats = 4 lines
  EXPECT_FALSE(vector_layout(100).cache_line_aligned);
}

TEST(VectorCache, ConcurrentUseKeepsItConsistent) {
  FakeClock clock;
  auto o = options(clock);
  o.base_quota_bytes = VectorCache(o).entry_bytes(8) * 50;
  VectorCache c(o);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string tenant = t % 2 ? "odd" : "even";
      for (int i = 0; i < 300; ++i) {
        const int id = (i * 7 + t) % 80;
        auto v = random_vector(kDim, id);
        auto r = c.lookup(tenant, v);
        // A value found is always the one stored for that vector (or a semantic neighbour's,
        // never at this threshold for independent random vectors).
        if (r.value && *r.value != "value-" + std::to_string(id)) ++wrong;
        if (r.result != LookupResult::Hit) c.insert(tenant, v, "value-" + std::to_string(id));
        if (i % 50 == 0) c.set_competition(tenant, (i % 100) / 100.0);
        if (i % 100 == 0 && t == 0) c.rebalance();
        if (i == 150 && t == 1) c.set_model_version("v2");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (const char* tenant : {"odd", "even"}) {
    auto s = c.stats(tenant);
    EXPECT_LE(s.usage_bytes, s.quota_bytes);
    EXPECT_EQ(s.hits + s.misses + s.stale, 600u);
  }
}

}  // namespace
}  // namespace tailcause::cache
