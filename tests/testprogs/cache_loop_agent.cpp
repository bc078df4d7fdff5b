// SPDX-License-Identifier: Apache-2.0
// An agent with a vector cache shared by two tenants, for the closed-loop test
// (tests/e2e/test_cache_loop.sh):
//
//   cache_loop_agent SECONDS feedback|none [LOOP_AFTER_S]
//
// Tenant loop-a serves precomputed answers: its cache is filled only by warm-up (the loader
// stands for the offline answer store), so until something warms it every lookup misses. It
// asks paraphrases (cosine 0.97) of 40 topics. Tenant loop-b floods the cache with one-off
// queries, three per loop-a query, storing each answer. Every lookup is inside an SDK request
// of its tenant, so the daemon sees them as the cache_lookup probe.
// With `feedback`, CacheFeedback follows the daemon's verdicts (every 300 ms, from LOOP_AFTER_S
// seconds on: a tracer attaches a new process's libraries within its rescan period, so the
// lookups before the loop acts are seen too): loop-a's breakdown warms it up, the competition
// index sets the quotas. With `none`, nothing does.
// Prints key=value lines: loop-a's hit rate before and after the first warm-up, what the loop
// did, and both tenants' quotas and lookup counts as the library counts them.
#include <tailcause/cache/feedback.h>
#include <tailcause/cache/vector_cache.h>
#include <tailcause/sdk.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tc = tailcause::cache;

namespace {

constexpr std::size_t kDim = 64;
constexpr int kTopics = 40;

std::vector<float> unit(std::mt19937_64& rng) {
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(kDim);
  double s = 0;
  for (auto& x : v) {
    x = n(rng);
    s += x * x;
  }
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

// A unit vector at cosine `c` from unit vector `a`.
std::vector<float> paraphrase(const std::vector<float>& a, double c, std::mt19937_64& rng) {
  auto b = unit(rng);
  double d = 0, s = 0;
  for (std::size_t i = 0; i < kDim; ++i) d += a[i] * b[i];
  for (std::size_t i = 0; i < kDim; ++i) {
    b[i] = static_cast<float>(b[i] - d * a[i]);
    s += b[i] * b[i];
  }
  const double k = std::sqrt(1 - c * c) / std::sqrt(s);
  for (std::size_t i = 0; i < kDim; ++i) b[i] = static_cast<float>(c * a[i] + k * b[i]);
  return b;
}

struct Counts {
  uint64_t lookups = 0, hits = 0;
  double rate() const { return lookups ? static_cast<double>(hits) / lookups : 0; }
};

}  // namespace

int main(int argc, char** argv) {
  if ((argc != 3 && argc != 4) ||
      (std::string(argv[2]) != "feedback" && std::string(argv[2]) != "none")) {
    std::fprintf(stderr, "usage: cache_loop_agent SECONDS feedback|none [LOOP_AFTER_S]\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const double loop_after = argc == 4 ? std::atof(argv[3]) : 0;
  const bool follow = std::string(argv[2]) == "feedback";

  tc::CacheOptions o;
  o.dim = kDim;
  o.name = "loop-retrieval";
  o.threshold = 0.9f;
  o.ttl = std::chrono::minutes(10);
  o.warmup = false;  // only the loop warms up
  o.base_quota_bytes = tc::VectorCache(o).entry_bytes(32) * 200;
  tc::VectorCache cache(o);
  cache.set_loader([](const std::string&, const std::vector<std::vector<float>>& vs) {
    return std::vector<std::optional<std::string>>(vs.size(), std::string(32, 'a'));
  });

  std::mt19937_64 rng(42);
  std::vector<std::vector<float>> topics;
  for (int i = 0; i < kTopics; ++i) topics.push_back(unit(rng));

  cache.set_base_quota("loop-a", o.base_quota_bytes);  // both tenants exist from the start
  cache.set_base_quota("loop-b", o.base_quota_bytes);
  std::optional<tc::CacheFeedback> loop;
  if (follow) loop.emplace(cache, tc::sdk_verdict_source());
  const auto loop_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(loop_after);

  Counts before, after;
  uint64_t b_lookups = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (uint64_t i = 0; std::chrono::steady_clock::now() < end; ++i) {
    if (loop && std::chrono::steady_clock::now() >= loop_at)
      loop->start(std::chrono::milliseconds(300));  // once; later calls are no-ops
    const bool warmed = cache.stats("loop-a").warmups > 0;
    {
      tailcause::Request request("loop-a", "cache-loop");
      const auto r =
          cache.lookup("loop-a", paraphrase(topics[i % kTopics], 0.97, rng), request.id());
      Counts& c = warmed ? after : before;
      c.lookups++;
      c.hits += r.result == tc::LookupResult::Hit;
    }
    for (int k = 0; k < 3; ++k) {
      tailcause::Request request("loop-b", "cache-loop");
      const auto v = unit(rng);
      if (cache.lookup("loop-b", v, request.id()).result != tc::LookupResult::Hit)
        cache.insert("loop-b", v, std::string(32, 'b'));
      b_lookups++;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
  }
  if (loop) loop->stop();

  const auto a = cache.stats("loop-a"), b = cache.stats("loop-b");
  const tc::FeedbackStats f = loop ? loop->stats() : tc::FeedbackStats{};
  std::printf("a.hit_rate_before=%.3f\na.lookups_before=%llu\n", before.rate(),
              static_cast<unsigned long long>(before.lookups));
  std::printf("a.hit_rate_after=%.3f\na.lookups_after=%llu\n", after.rate(),
              static_cast<unsigned long long>(after.lookups));
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("a.hits=%llu\na.misses=%llu\na.warmups=%llu\na.warmed_entries=%llu\n", u(a.hits),
              u(a.misses), u(a.warmups), u(a.warmed_entries));
  std::printf("a.quota_bytes=%llu\nb.quota_bytes=%llu\nbase_quota_bytes=%llu\n", u(a.quota_bytes),
              u(b.quota_bytes), u(a.base_quota_bytes));
  std::printf("b.lookups=%llu\nb.competition=%.3f\na.competition=%.3f\n", u(b_lookups),
              b.competition, a.competition);
  std::printf("feedback.polls=%llu\nfeedback.unanswered=%llu\nfeedback.breakdowns=%llu\n",
              u(f.polls), u(f.unanswered), u(f.breakdowns));
  std::printf("feedback.warmups=%llu\nfeedback.rebalances=%llu\n", u(f.warmups), u(f.rebalances));
  return 0;
}
