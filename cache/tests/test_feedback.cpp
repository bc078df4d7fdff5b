// SPDX-License-Identifier: Apache-2.0
// CacheFeedback: the daemon's verdicts (here scripted per tenant; the e2e test
// tests/e2e/test_cache_loop.sh drives it from the real daemon) turn into warm-ups on a
// breakdown's start and into quotas from the competition index.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "tailcause/cache/feedback.h"
#include "tailcause/cache/vector_cache.h"
#include "test_helpers.h"

namespace tailcause::cache {
namespace {

using test::at_cosine;
using test::FakeClock;
using test::random_vector;

constexpr std::size_t kDim = 64;

struct ScriptedDaemon {
  std::mutex mu;
  std::map<std::string, std::optional<DaemonVerdict>> verdicts;  // absent: not seen
  std::vector<std::pair<std::string, std::string>> asked;
  VerdictSource source() {
    return [this](const std::string& tenant, const std::string& cache) {
      std::lock_guard lock(mu);
      asked.emplace_back(tenant, cache);
      auto it = verdicts.find(tenant);
      return it == verdicts.end() ? std::optional<DaemonVerdict>(DaemonVerdict{}) : it->second;
    };
  }
  void set(const std::string& tenant, std::optional<DaemonVerdict> v) {
    std::lock_guard lock(mu);
    verdicts[tenant] = v;
  }
};

struct Fixture {
  FakeClock clock;
  uint64_t entry = 0;
  std::unique_ptr<VectorCache> cache;
  std::vector<std::vector<float>> topics = {random_vector(kDim, 1), random_vector(kDim, 2)};
  Fixture() {
    CacheOptions o;
    o.dim = kDim;
    o.name = "retrieval";
    o.threshold = 0.9f;
    o.admission = false;
    o.warmup = false;  // only the loop warms up
    o.clock = clock.fn();
    entry = VectorCache(o).entry_bytes(4);
    o.base_quota_bytes = entry * 100;
    cache = std::make_unique<VectorCache>(o);
    cache->set_loader([](const std::string&, const std::vector<std::vector<float>>& vs) {
      return std::vector<std::optional<std::string>>(vs.size(), std::string("warm"));
    });
    // Tenant "a" asks about two topics and never stores: every lookup misses.
    for (int i = 0; i < 30; ++i) cache->lookup("a", at_cosine(topics[i % 2], 0.95, 100 + i));
    cache->insert("b", random_vector(kDim, 900), "x");
  }
};

TEST(CacheFeedback, ABreakdownsStartWarmsTheTenantUpOnce) {
  Fixture f;
  ScriptedDaemon daemon;
  CacheFeedback loop(*f.cache, daemon.source());
  loop.poll();  // healthy, or not seen: nothing to do
  EXPECT_EQ(f.cache->stats("a").warmups, 0u);
  EXPECT_EQ(daemon.asked, (std::vector<std::pair<std::string, std::string>>{{"a", "retrieval"},
                                                                            {"b", "retrieval"}}));

  daemon.set("a", DaemonVerdict{true, 0.2, 1.0, 30});
  loop.poll();
  auto s = f.cache->stats("a");
  EXPECT_EQ(s.warmups, 1u);
  EXPECT_EQ(s.warmed_entries, 8u);  // two topics: each centre and its three nearest patterns
  for (const auto& t : f.topics)
    EXPECT_EQ(f.cache->lookup("a", at_cosine(t, 0.97, 7)).result, LookupResult::Hit);

  loop.poll();  // still the same breakdown: no second warm-up
  EXPECT_EQ(f.cache->stats("a").warmups, 1u);
  daemon.set("a", DaemonVerdict{false, 0.2, 0.1, 30});
  loop.poll();
  daemon.set("a", DaemonVerdict{true, 0.2, 0.9, 30});  // a new breakdown
  loop.poll();
  EXPECT_EQ(f.cache->stats("a").warmups, 2u);
  const auto st = loop.stats();
  EXPECT_EQ(st.polls, 5u);
  EXPECT_EQ(st.breakdowns, 2u);
  EXPECT_EQ(st.warmups, 2u);
  // The second loaded what the lookups since recorded: the library counts the same.
  EXPECT_EQ(st.warmed_entries, f.cache->stats("a").warmed_entries);
  EXPECT_GT(st.warmed_entries, 8u);
  EXPECT_EQ(st.unanswered, 0u);
}

TEST(CacheFeedback, CompetitionSetsTheQuotasAtOnceWhenItMoves) {
  Fixture f;
  for (int i = 0; i < 100; ++i) f.cache->insert("b", random_vector(kDim, 1000 + i), "x");
  ScriptedDaemon daemon;
  CacheFeedback loop(*f.cache, daemon.source());
  daemon.set("a", DaemonVerdict{false, 0.0, 0.2, 50});
  daemon.set("b", DaemonVerdict{false, 1.0, 1.0, 500});  // b floods the cache
  loop.poll();
  EXPECT_EQ(f.cache->stats("b").competition, 1.0);
  EXPECT_EQ(f.cache->stats("b").quota_bytes, f.entry * 20);  // the floor, without maintain()
  EXPECT_EQ(f.cache->stats("b").entries, 20u);
  EXPECT_EQ(f.cache->stats("a").quota_bytes, f.entry * 180);  // the budget b gave up
  EXPECT_EQ(loop.stats().rebalances, 1u);

  daemon.set("b", DaemonVerdict{false, 0.95, 1.0, 500});  // a small move: applied, no rebalance
  loop.poll();
  EXPECT_EQ(f.cache->stats("b").competition, 0.95);
  EXPECT_EQ(loop.stats().rebalances, 1u);
  daemon.set("b", DaemonVerdict{false, 0.3, 0.4, 500});  // the flood is over
  loop.poll();
  EXPECT_EQ(loop.stats().rebalances, 2u);
  EXPECT_EQ(f.cache->stats("b").quota_bytes, f.entry * 100);
}

TEST(CacheFeedback, NoAnswerOrNoLookupsChangesNothing) {
  Fixture f;
  ScriptedDaemon daemon;
  CacheFeedback loop(*f.cache, daemon.source());
  f.cache->set_competition("a", 0.5);
  daemon.set("a", std::nullopt);                      // no daemon
  daemon.set("b", DaemonVerdict{true, 0.9, 1.0, 0});  // not in the daemon's window
  loop.poll();
  EXPECT_EQ(loop.stats().unanswered, 1u);
  EXPECT_EQ(f.cache->stats("a").competition, 0.5);
  EXPECT_EQ(f.cache->stats("b").competition, 0.0);
  EXPECT_EQ(f.cache->stats("b").warmups, 0u);
  daemon.set("a", DaemonVerdict{true, 7.0, 1.0, 30});  // a broken source
  loop.poll();
  EXPECT_EQ(f.cache->stats("a").competition, 0.5);
  EXPECT_EQ(f.cache->stats("a").warmups, 0u);
  EXPECT_EQ(loop.stats().rebalances, 0u);
  // A verdict about a tenant the cache does not have (follow(), as the C ABI passes them on)
  // neither creates it nor fails.
  loop.follow({{"stranger", DaemonVerdict{true, 0.9, 1.0, 50}}, {"", DaemonVerdict{}}});
  EXPECT_EQ(f.cache->tenants(), (std::vector<std::string>{"a", "b"}));
}

TEST(CacheFeedback, ItsThreadPollsUntilStopped) {
  Fixture f;
  ScriptedDaemon daemon;
  daemon.set("a", DaemonVerdict{true, 0.2, 1.0, 30});
  CacheFeedback loop(*f.cache, daemon.source());
  loop.start(std::chrono::milliseconds(5));
  loop.start(std::chrono::milliseconds(5));  // a second start is a no-op
  for (int i = 0; i < 2000 && loop.stats().polls < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  loop.stop();
  loop.stop();
  const uint64_t polls = loop.stats().polls;
  EXPECT_GE(polls, 3u);
  EXPECT_EQ(loop.stats().warmups, 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(loop.stats().polls, polls);  // stopped means stopped
}

TEST(CacheFeedback, TheSdkSourceSaysNoDaemonWhenNoneServes) {
  setenv("TAILCAUSE_BREAKER_SOCKET", "/nonexistent/tailcause-test/breaker.sock", 1);
  EXPECT_FALSE(sdk_verdict_source()("a", "retrieval"));
  unsetenv("TAILCAUSE_BREAKER_SOCKET");
}

}  // namespace
}  // namespace tailcause::cache
