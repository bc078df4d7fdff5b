// SPDX-License-Identifier: Apache-2.0
// Vector cache benchmark (bench/README.md): prints figures and ratios, asserts nothing.
//   cache_bench [--entries N] [--dim D] [--quick] [--semantic-only | --exact-only]
// 1. exact lookups/s on one core; 2. semantic lookups/s over N entries and recall@1 against
// exact search; 3. hit rate after a cold start and after a drift, warm-up on vs off; 4. a
// tenant's P99 (lookup + retrieval on a miss) while another floods, quotas on vs off;
// 5. pages touched by grouped retrievals, locality layout vs original order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <tailcause/cache/locality.h>
#include <tailcause/cache/semantic_index.h>
#include <tailcause/cache/vector_cache.h>
#include <tailcause/cache/vector_check.h>

using namespace tailcause::cache;
using Clock = std::chrono::steady_clock;

namespace {

struct Rng {
  std::mt19937_64 g;
  std::normal_distribution<float> n{0, 1};
  explicit Rng(uint64_t s) : g(s) {}
  std::vector<float> unit(std::size_t dim) {
    std::vector<float> v(dim);
    for (auto& x : v) x = n(g);
    return normalized_or_throw(v, dim);
  }
  // A unit vector at about cosine c from unit vector a.
  std::vector<float> near(const std::vector<float>& a, double c) {
    auto b = unit(a.size());
    double d = dot(a.data(), b.data(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) b[i] -= static_cast<float>(d * a[i]);
    b = normalized_or_throw(b, b.size());
    std::vector<float> out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      out[i] = static_cast<float>(c * a[i] + std::sqrt(1 - c * c) * b[i]);
    return out;
  }
};

// This thread's CPU seconds: rates "per core" on a shared machine count the CPU time we got.
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void exact_rate(std::size_t entries, std::size_t dim) {
  CacheOptions o;
  o.dim = dim;
  o.semantic = false;
  o.base_quota_bytes = uint64_t(entries) * 4096;
  VectorCache c(o);
  Rng r(1);
  std::vector<std::vector<float>> vs;
  for (std::size_t i = 0; i < entries; ++i) {
    vs.push_back(r.unit(dim));
    c.insert("t", vs.back(), "v");
  }
  std::size_t hits = 0, n = 0;
  const double c0 = cpu_now();
  while (cpu_now() - c0 < 1)
    for (int k = 0; k < 10000; ++k, ++n)
      hits += c.lookup("t", vs[n % entries]).result == LookupResult::Hit;
  const double rate = n / (cpu_now() - c0);
  std::printf(
      "exact lookups: %.2fM/s on one core (goal >= 1M: %.2fx), %zu entries dim %zu, hit ratio "
      "%.3f\n",
      rate / 1e6, rate / 1e6, entries, dim, double(hits) / n);
}

void semantic_rate(std::size_t entries, std::size_t dim) {
  // Clustered data (queries near stored vectors, as a semantic cache sees them).
  Rng r(2);
  std::vector<std::vector<float>> centres;
  for (std::size_t i = 0; i < entries / 50; ++i) centres.push_back(r.unit(dim));
  std::vector<float> flat;
  for (std::size_t i = 0; i < entries; ++i) {
    auto v = r.near(centres[i % centres.size()], 0.8);
    flat.insert(flat.end(), v.begin(), v.end());
  }
  std::vector<std::vector<float>> queries;
  for (int q = 0; q < 1000; ++q) {
    std::size_t i = r.g() % entries;
    queries.push_back(
        r.near(std::vector<float>(flat.begin() + i * dim, flat.begin() + (i + 1) * dim), 0.9));
  }
  // Exact nearest neighbour of each query (brute force).
  std::vector<uint64_t> truth;
  const double cb = cpu_now();
  for (const auto& q : queries) {
    float best = -2;
    uint64_t arg = 0;
    for (std::size_t i = 0; i < entries; ++i) {
      float s = dot(q.data(), flat.data() + i * dim, dim);
      if (s > best) best = s, arg = i;
    }
    truth.push_back(arg);
  }
  const double brute_rate = queries.size() / (cpu_now() - cb);
  // The library's walk (int8 copies, candidates ranked again exactly) against the same graph
  // walking the float vectors, in one run.
  std::map<std::size_t, double> float_rate;
  for (bool quantized : {false, true}) {
    IndexParams p;
    p.quantized = quantized;
    const char* walk = quantized ? "int8 walk" : "float walk";
    SemanticIndex index(dim, p);
    const double c0 = cpu_now();
    for (std::size_t i = 0; i < entries; ++i) index.add(i, {flat.data() + i * dim, dim});
    std::printf("semantic index (%s): built %zu x %zu in %.1f CPU s (hnswlib M=%zu efC=%zu)\n",
                walk, entries, dim, cpu_now() - c0, p.m, p.ef_construction);
    for (std::size_t ef : {16, 32, 64, 128}) {
      index.set_ef(ef);
      std::size_t right = 0, n = 0;
      const double c1 = cpu_now();
      while (cpu_now() - c1 < 1 || n < queries.size()) {
        for (std::size_t q = 0; q < queries.size(); ++q, ++n) {
          auto m = index.nearest(queries[q]);
          if (n < queries.size() && m && m->label == truth[q]) ++right;
        }
      }
      const double rate = n / (cpu_now() - c1);
      std::printf(
          "semantic lookups (%s) ef=%zu: %.1fk/s on one core (goal >= 20k: %.2fx), recall@1 "
          "%.3f (goal >= 0.95), exact search %.0f/s (%.0fx slower)",
          walk, ef, rate / 1e3, rate / 2e4, double(right) / queries.size(), brute_rate,
          rate / brute_rate);
      if (quantized) std::printf(", %.2fx the float walk", rate / float_rate[ef]);
      std::printf("\n");
      float_rate[ef] = rate;
    }
  }
}

// A tenant asking about 40 topics (Zipf), each query at cosine 0.95 from its topic.
struct Workload {
  std::size_t dim;
  Rng r{3};
  std::vector<std::vector<float>> topics;
  std::discrete_distribution<int> pick;
  Workload(std::size_t d, int n_topics, int offset) : dim(d) {
    Rng t(100 + offset);
    std::vector<double> w;
    for (int i = 0; i < n_topics; ++i) {
      topics.push_back(t.unit(dim));
      w.push_back(1.0 / (i + 1));
    }
    pick = std::discrete_distribution<int>(w.begin(), w.end());
  }
  std::vector<float> next() { return r.near(topics[pick(r.g)], 0.95); }
};

double run_window(VectorCache& c, Workload& w, int n) {
  int hits = 0;
  for (int i = 0; i < n; ++i) {
    auto q = w.next();
    if (c.lookup("t", q).result == LookupResult::Hit)
      ++hits;
    else
      c.insert("t", q, "docs");
  }
  return double(hits) / n;
}

void warmup_effect(std::size_t dim) {
  double rate[2][2];
  for (int on = 0; on < 2; ++on) {
    auto now = std::make_shared<int64_t>(0);
    CacheOptions o;
    o.dim = dim;
    o.threshold = 0.93f;
    o.warmup = on;
    o.clock = [now] { return *now; };
    VectorCache c(o);
    c.set_loader([](const std::string&, const std::vector<std::vector<float>>& vs) {
      return std::vector<std::optional<std::string>>(vs.size(), std::string("docs"));
    });
    Workload before(dim, 40, 0), after(dim, 40, 1);
    run_window(c, before, 200);  // cold: the first window
    *now += 5'000'000'000;
    c.maintain();
    rate[on][0] = run_window(c, before, 200);
    run_window(c, after, 100);  // the drift: new topics start
    *now += 5'000'000'000;
    c.maintain();
    rate[on][1] = run_window(c, after, 200);
  }
  std::printf("hit rate after a cold start: %.3f with warm-up, %.3f without (%.2fx)\n", rate[1][0],
              rate[0][0], rate[1][0] / rate[0][0]);
  std::printf("hit rate after a drift:      %.3f with warm-up, %.3f without (%.2fx)\n", rate[1][1],
              rate[0][1], rate[1][1] / rate[0][1]);
}

void quota_effect(std::size_t dim) {
  // Misses cost a real exact search over a 20k-vector corpus.
  Rng r(5);
  std::vector<float> corpus;
  for (int i = 0; i < 20000; ++i) {
    auto v = r.unit(dim);
    corpus.insert(corpus.end(), v.begin(), v.end());
  }
  auto retrieve = [&](const std::vector<float>& q) {
    float best = -2;
    for (int i = 0; i < 20000; ++i)
      best = std::max(best, dot(q.data(), corpus.data() + i * dim, dim));
    return std::to_string(best);
  };
  double p99[2];
  for (int on = 0; on < 2; ++on) {
    CacheOptions o;
    o.dim = dim;
    o.threshold = 0.99f;
    o.quotas = on;
    o.warmup = false;
    o.base_quota_bytes = VectorCache(o).entry_bytes(12) * 100;
    VectorCache c(o);
    Rng qa(7), qb(8);
    std::vector<std::vector<float>> a_set;  // tenant a: 160 recurring questions
    for (int i = 0; i < 160; ++i) a_set.push_back(qa.unit(dim));
    // The daemon's view: a's misses are its own (competition 0), b floods shared memory (1).
    c.set_competition("a", 0.0);
    c.set_competition("b", 1.0);
    c.insert("b", qb.unit(dim), "x");
    c.rebalance();
    std::vector<double> lat;
    std::mt19937_64 g(9);
    for (int i = 0; i < 6000; ++i) {
      for (int k = 0; k < 4; ++k) {  // b floods with one-off queries
        auto q = qb.unit(dim);
        if (c.lookup("b", q).result != LookupResult::Hit) c.insert("b", q, "x");
      }
      const auto& q = a_set[g() % a_set.size()];
      const double t0 = cpu_now();
      if (c.lookup("a", q).result != LookupResult::Hit) c.insert("a", q, retrieve(q));
      if (i >= 1000) lat.push_back(cpu_now() - t0);
    }
    std::sort(lat.begin(), lat.end());
    p99[on] = lat[lat.size() * 99 / 100];
    auto s = c.stats("a");
    std::printf("  quotas %s: a's quota %.0f entries, hit ratio %.3f\n", on ? "on " : "off",
                double(s.quota_bytes) / c.entry_bytes(12), double(s.hits) / (s.hits + s.misses));
  }
  std::printf("tenant a's P99 while b floods: %.3f ms with quotas, %.3f ms without (%.2fx)\n",
              p99[1] * 1e3, p99[0] * 1e3, p99[0] / p99[1]);
}

void locality_effect() {
  // 100k rows of 1 KiB (dim 256), retrievals reading groups of 8 rows scattered over the file.
  const std::size_t rows = 100000, row_bytes = 1024, page = 4096;
  std::mt19937_64 g(11);
  std::vector<std::vector<uint32_t>> groups(2000);
  std::vector<uint32_t> perm(rows);
  for (uint32_t i = 0; i < rows; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), g);
  for (std::size_t k = 0; k < groups.size(); ++k)
    groups[k].assign(perm.begin() + k * 8, perm.begin() + k * 8 + 8);
  CoAccessTracker t;
  uint64_t now = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& grp = groups[g() % groups.size()];
    for (uint32_t c : grp) t.record(c, now);
    now += kCoAccessWindowNs;
  }
  t.flush();
  auto found = t.groups();
  auto order = layout_order(rows, found);
  std::vector<uint32_t> position(rows);
  for (uint32_t i = 0; i < rows; ++i) position[order[i]] = i;
  double pages_before = 0, pages_after = 0;
  for (const auto& grp : groups) {
    std::unordered_set<uint64_t> a, b;
    for (uint32_t c : grp) {
      a.insert(c * row_bytes / page);
      b.insert(position[c] * row_bytes / page);
    }
    pages_before += a.size();
    pages_after += b.size();
  }
  std::printf(
      "locality: %zu groups found (of %zu); pages per retrieval %.2f in the original order, "
      "%.2f in the layout (%.2fx fewer)\n",
      found.size(), groups.size(), pages_before / groups.size(), pages_after / groups.size(),
      pages_before / pages_after);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures as they come
  std::size_t entries = 100000, dim = 256;
  bool semantic_only = false, exact_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--entries") && i + 1 < argc)
      entries = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--dim") && i + 1 < argc)
      dim = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick"))
      entries = 10000;
    else if (!std::strcmp(argv[i], "--semantic-only"))
      semantic_only = true;
    else if (!std::strcmp(argv[i], "--exact-only"))
      exact_only = true;
    else {
      std::fprintf(stderr,
                   "usage: cache_bench [--entries N] [--dim D] [--quick] [--semantic-only | "
                   "--exact-only]\n");
      return 2;
    }
  }
  if (!semantic_only) exact_rate(entries, dim);
  if (exact_only) return 0;
  if (!semantic_only) {
    warmup_effect(dim);
    quota_effect(dim);
    locality_effect();
  }
  semantic_rate(entries, dim);
}
