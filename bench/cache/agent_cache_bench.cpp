// SPDX-License-Identifier: Apache-2.0
// The vector cache on the example agent's workload (bench/README.md): the vectors the agent
// looks up (examples/rag_agent/query_source.h: its question pool, tokenizer, embedder and
// projection), its Zipf question mix and Poisson arrivals from the agent's own seeds, and
// on a miss its real IVF retrieval over an index file built as the agent builds it. Each
// feature on vs off, in one process; prints figures and ratios, asserts nothing.
//   agent_cache_bench [--quick] [--rate R]... [--vectors N]
// (a) hit rate per window after a cold start, warm-up on vs off; (b) after a drift of the
// question mix, warm-up on vs off; (c) the regular questions' hit rate during and after a burst
// of one-off variants from many users, admission on vs off; (d) tenant a's P99 (lookup, and
// retrieval on a miss) while tenant b floods the same cache, quotas on vs off.
// Time is the cache's injected clock, moved by the arrivals: maintain() closes a window every
// rebalance period (5 s) of simulated time, however long the run takes.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <tailcause/cache/vector_cache.h>
#include <tailcause/cache/warmup.h>

#include "linalg.h"
#include "options.h"   // the agent's default rate and index size
#include "pipeline.h"  // the agent's nprobe and top_k (PipelineConfig)
#include "query_source.h"
#include "retrieval_cache.h"
#include "rng.h"
#include "vector_index.h"

namespace {

using tailcause::cache::CacheOptions;
using tailcause::cache::LookupResult;
using tailcause::cache::VectorCache;
using Docs = std::vector<rag::Neighbour>;

constexpr int64_t kSecond = 1'000'000'000;

// This thread's CPU seconds: a busy machine slows the run, not the figure (much).
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The value as RetrievalCache stores it: the neighbours' bytes.
std::string to_value(const Docs& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size() * sizeof(rag::Neighbour)};
}
Docs from_value(const std::string& v) {
  Docs d(v.size() / sizeof(rag::Neighbour));
  std::memcpy(d.data(), v.data(), d.size() * sizeof(rag::Neighbour));
  return d;
}

// How many of `want`'s documents `got` holds: a semantic hit may serve another question's.
int docs_in_common(const Docs& got, const Docs& want) {
  int n = 0;
  for (const auto& g : got)
    for (const auto& w : want) n += g.row == w.row;
  return n;
}

// A temporary directory for the index files, removed on any exit from main.
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = fmt::format("{}/agent_cache_bench.XXXXXX", base && *base ? base : "/tmp");
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp: " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string index_file(const std::string& dir, const std::string& tenant, std::size_t vectors,
                       std::size_t dim) {
  // As the agent's supervisor writes it: index-<tenant>.f32, seeded by the tenant's name.
  std::string path = fmt::format("{}/index-{}.f32", dir, tenant);
  rag::ensure_index_file(path, vectors, dim, rag::fnv1a("index:" + tenant));
  return path;
}

// One tenant of the agent: its questions, each one's query vector and retrieval (computed once:
// the agent's steps are deterministic, so a question always looks up the same vector), its
// index, and the retrieval the agent runs on a miss.
struct Tenant {
  Tenant(const std::string& tenant, const std::string& dir, std::size_t vectors, std::size_t dim)
      : name(tenant),
        index(index_file(dir, tenant, vectors, dim)),
        encoder(tenant, dim),
        questions(rag::make_questions(tenant)) {
    for (const auto& q : questions) {
      vectors_.push_back(encoder.query_for(q));
      answers.push_back(retrieve(vectors_.back()));
    }
  }
  // RagPipeline::retrieve's IVF search on one thread. The agent scans the odd-numbered lists on
  // a helper thread and merges; both halves here, merged the same way, give the same neighbours
  // and make this thread's CPU time the whole retrieval.
  Docs retrieve(std::span<const float> q) const {
    const rag::PipelineConfig agent;
    auto lists = index.closest_lists(q, agent.nprobe);
    std::vector<uint32_t> mine, theirs;
    for (std::size_t i = 0; i < lists.size(); ++i) (i % 2 ? theirs : mine).push_back(lists[i]);
    auto best = index.scan_lists(q, mine, agent.top_k);
    return rag::merge_top_k(std::move(best), index.scan_lists(q, theirs, agent.top_k), agent.top_k);
  }
  const std::vector<float>& vector(uint32_t question) const { return vectors_[question]; }

  std::string name;
  rag::VectorIndex index;
  rag::QueryEncoder encoder;
  std::vector<std::string> questions;
  std::vector<Docs> answers;

 private:
  std::vector<std::vector<float>> vectors_;
};

// The agent's open-loop arrivals (tenant_worker.cpp): Poisson at `rate`, each request a Zipf
// draw over the question pool, from the agent's seed: the agent's own request sequence.
class Arrivals {
 public:
  Arrivals(const std::string& seed, std::size_t questions, double rate)
      : rng_(rag::fnv1a(seed)), picker_(questions), rate_(rate) {}
  struct Request {
    int64_t at_ns;
    uint32_t rank;  // Zipf rank: 0 is the most frequent
  };
  const Request& peek() const { return next_; }
  // In the agent's order of draws: a request's question, then the gap to the next one.
  Request pop() {
    Request r = next_;
    next_.at_ns += static_cast<int64_t>(-std::log(1.0 - rng_.uniform()) / rate_ * 1e9);
    next_.rank = picker_.pick(rng_.uniform());
    return r;
  }
  void start(int64_t at_ns) {
    next_.at_ns = at_ns;
    next_.rank = picker_.pick(rng_.uniform());
  }

 private:
  rag::SplitMix rng_;
  rag::QuestionPicker picker_;
  double rate_;
  Request next_{};
};

// One-off questions from many users: a question of the pool (Zipf: users ask about what is
// popular) with the user's own words after it, so each text and each vector is new, near the
// question's. Embedded once (the embedder is the costly part) and shared by the runs compared.
struct OneOffs {
  struct Query {
    int64_t at_ns;
    std::vector<float> vector;
  };
  int64_t from_ns;
  std::vector<Query> queries;
  std::map<std::size_t, std::string> values;  // retrievals, memoised: not what is timed

  OneOffs(const Tenant& t, const std::string& seed, double rate, int64_t from, int64_t to_ns)
      : from_ns(from) {
    Arrivals a(seed, t.questions.size(), rate);
    a.start(from);
    for (uint64_t user = 1; a.peek().at_ns < to_ns; ++user) {
      auto r = a.pop();
      std::string text = fmt::format("{} i am user {}", t.questions[r.rank], 1000 + user);
      queries.push_back({r.at_ns, t.encoder.query_for(text)});
    }
  }
  const std::string& value(const Tenant& t, std::size_t i) {
    auto it = values.find(i);
    if (it == values.end()) it = values.emplace(i, to_value(t.retrieve(queries[i].vector))).first;
    return it->second;
  }
};

// The cache configurations compared: the agent's retrieval cache as it is (semantic lookups at
// cosine 0.99), and the same with exact keys only (every hit then is the question's own).
struct Config {
  const char* label;
  bool semantic;
};
constexpr Config kConfigs[] = {{"agent's cache (semantic 0.99)", true},
                               {"exact keys only             ", false}};

CacheOptions options_for(std::size_t dim, const Config& cfg) {
  const rag::PipelineConfig agent;
  CacheOptions o = rag::retrieval_cache_options(dim, rag::kRetrievalCacheEntries,
                                                rag::kRetrievalCacheTtl, agent.top_k);
  o.semantic = cfg.semantic;
  // The agent's quota is 128 entries: the same count when entries are smaller (no index).
  o.base_quota_bytes = VectorCache(o).entry_bytes(agent.top_k * sizeof(rag::Neighbour)) *
                       rag::kRetrievalCacheEntries;
  return o;
}

// Hits and lookups of one window (one maintenance period).
struct Window {
  uint64_t lookups = 0, hits = 0, stale = 0, stale_similar = 0, docs_right = 0, rejected = 0;
  double rate() const { return lookups ? double(hits) / lookups : 0; }
};

// A cache on the injected clock, with the agent's retrieval as its warm-up loader.
class Run {
 public:
  Run(CacheOptions o, const std::vector<Tenant*>& tenants) : now_(std::make_shared<int64_t>(0)) {
    o.clock = [now = now_] { return *now; };
    cache_ = std::make_unique<VectorCache>(o);
    std::map<std::string, Tenant*> by_name;
    for (Tenant* t : tenants) by_name[t->name] = t;
    cache_->set_loader(
        [by_name](const std::string& tenant, const std::vector<std::vector<float>>& vectors) {
          std::vector<std::optional<std::string>> out;
          for (const auto& v : vectors) out.push_back(to_value(by_name.at(tenant)->retrieve(v)));
          return out;
        });
  }
  // Moves the clock and runs the maintenance tick, as the library's timer would: true when a
  // window closed (quotas rebalanced, patterns rolled, maybe a warm-up).
  bool advance(int64_t t_ns) {
    *now_ = std::max(*now_, t_ns);
    return cache_->maintain();
  }
  struct Served {
    bool hit, stale, similar;  // similar: the entry was found by similarity, not its exact key
    bool rejected;             // the store after a miss, refused by admission
    int docs_right;            // of the question's own documents, on a hit
    double cpu_s;              // lookup, and retrieval and store on a miss or a stale entry
  };
  // The agent's retrieval stage: lookup; on a miss or a stale entry, the retrieval and store.
  Served serve(const Tenant& t, std::span<const float> q, const Docs* own,
               const std::string* memo = nullptr) {
    const double c0 = cpu_now();
    auto r = cache_->lookup(t.name, q);
    if (r.result == LookupResult::Hit) {
      const double cpu = cpu_now() - c0;
      return {true, false, r.semantic, false, own ? docs_in_common(from_value(*r.value), *own) : 0,
              cpu};
    }
    const bool stale = r.result == LookupResult::Stale;
    const bool rejected = cache_->insert(t.name, q, memo ? *memo : to_value(t.retrieve(q))) ==
                          tailcause::cache::InsertResult::Rejected;
    return {false, stale, r.semantic, rejected, 0, cpu_now() - c0};
  }
  VectorCache& cache() { return *cache_; }
  int64_t now_ns() const { return *now_; }

 private:
  std::shared_ptr<int64_t> now_;
  std::unique_ptr<VectorCache> cache_;
};

// Tenant a's regular requests, counted per window.
struct Regular {
  Tenant& t;
  Arrivals arrivals;
  std::vector<Window> windows{1};
  std::size_t shift = 0;       // the drift: rank r asks question (r + shift) % n
  std::size_t next_shift = 0;  // the shift from the next window on
  explicit Regular(Tenant& tenant, double rate)
      : t(tenant), arrivals("arrivals:" + tenant.name, tenant.questions.size(), rate) {
    arrivals.start(0);
  }
  // Serves the next request; true when its arrival closed a window first.
  bool step(Run& run) {
    auto r = arrivals.pop();
    const bool closed = run.advance(r.at_ns);
    if (closed) {
      windows.emplace_back();
      shift = next_shift;
    }
    const uint32_t q = static_cast<uint32_t>((r.rank + shift) % t.questions.size());
    auto s = run.serve(t, t.vector(q), &t.answers[q]);
    Window& w = windows.back();
    ++w.lookups;
    w.hits += s.hit;
    w.stale += s.stale;
    w.stale_similar += s.stale && s.similar;
    w.docs_right += s.hit ? s.docs_right : 0;
    w.rejected += s.rejected;
    return closed;
  }
  // Serves requests until `n` more windows have closed (the request that closes the last one
  // is the first of the next window).
  void windows_pass(Run& run, std::size_t n) {
    const std::size_t target = windows.size() + n;
    while (windows.size() < target) step(run);
  }
};

double mean_rate(const std::vector<Window>& w, std::size_t from, std::size_t to) {
  uint64_t h = 0, n = 0;
  for (std::size_t i = from; i < to && i < w.size(); ++i) h += w[i].hits, n += w[i].lookups;
  return n ? double(h) / n : 0;
}
double docs_right(const std::vector<Window>& w, std::size_t from, std::size_t to) {
  uint64_t d = 0, h = 0;
  for (std::size_t i = from; i < to && i < w.size(); ++i) d += w[i].docs_right, h += w[i].hits;
  return h ? double(d) / h : 0;
}
// "0.50 (0.45 by similarity)": the share of lookups that found a stale entry, and of those
// found by similarity (another query's entry; the agent's store refreshes only its own key).
std::string stale(const std::vector<Window>& w, std::size_t from, std::size_t to) {
  uint64_t st = 0, sim = 0, n = 0;
  for (std::size_t i = from; i < to && i < w.size(); ++i)
    st += w[i].stale, sim += w[i].stale_similar, n += w[i].lookups;
  return n ? fmt::format("{:.2f} ({:.2f} by similarity)", double(st) / n, double(sim) / n)
           : std::string("n/a");
}
uint64_t rejected(const std::vector<Window>& w, std::size_t from, std::size_t to) {
  uint64_t r = 0;
  for (std::size_t i = from; i < to && i < w.size(); ++i) r += w[i].rejected;
  return r;
}
std::string rates(const std::vector<Window>& w, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to && i < w.size(); ++i) s += fmt::format(" {:.2f}", w[i].rate());
  return s;
}
std::string ratio(double on, double off) {
  return off > 0 ? fmt::format("{:.2f}x", on / off) : std::string("n/a");
}

// What the agent's vectors look like to the cache: how close its questions are to each other
// (the semantic threshold, warm-up's grouping) and how much their retrievals share.
void describe(const Tenant& t, std::size_t vectors) {
  const std::size_t n = t.questions.size(), dim = t.vector(0).size();
  std::vector<float> all, nearest;
  std::size_t over = 0, pairs = 0;
  double shared = 0;
  const float threshold =
      rag::retrieval_cache_options(dim, 1, rag::kRetrievalCacheTtl, 1).threshold;
  for (std::size_t i = 0; i < n; ++i) {
    float best = -2;
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const float c = rag::dot(t.vector(i).data(), t.vector(j).data(), dim);
      best = std::max(best, c);
      if (j > i) {
        all.push_back(c);
        if (c >= threshold) ++over, shared += docs_in_common(t.answers[i], t.answers[j]);
        ++pairs;
      }
    }
    nearest.push_back(best);
  }
  std::sort(all.begin(), all.end());
  std::sort(nearest.begin(), nearest.end());
  // Warm-up's greedy grouping (warmup.cpp) over all the questions.
  std::vector<std::size_t> leads;
  for (std::size_t i = 0; i < n; ++i) {
    bool home = false;
    for (std::size_t l : leads)
      home = home || rag::dot(t.vector(l).data(), t.vector(i).data(), dim) >=
                         tailcause::cache::kWarmupGroupCosine;
    if (!home) leads.push_back(i);
  }
  std::set<std::set<uint64_t>> distinct;
  std::vector<double> cost;
  for (std::size_t i = 0; i < n; ++i) {
    std::set<uint64_t> rows;
    for (const auto& d : t.answers[i]) rows.insert(d.row);
    distinct.insert(rows);
    const double c0 = cpu_now();
    t.retrieve(t.vector(i));
    cost.push_back(cpu_now() - c0);
  }
  std::sort(cost.begin(), cost.end());
  const rag::PipelineConfig agent;
  std::printf(
      "workload: tenant %s, %zu questions (Zipf 1.0), the agent's seeds; index %zu x %zu "
      "(nprobe %zu, top %zu): a retrieval costs %.3f ms CPU (median); cache of %zu entries, TTL "
      "%lld s\n",
      t.name.c_str(), n, vectors, dim, agent.nprobe, agent.top_k, cost[n / 2] * 1e3,
      rag::kRetrievalCacheEntries, (long long)rag::kRetrievalCacheTtl.count());
  std::printf(
      "query vectors: cosine between questions min %.4f, median %.4f, max %.4f; nearest other "
      "question median %.4f; %.1f%% of pairs at or above the cache's threshold %.2f; %zu "
      "warm-up group(s) at %.2f\n",
      all.front(), all[all.size() / 2], all.back(), nearest[n / 2], 100.0 * over / pairs, threshold,
      leads.size(), tailcause::cache::kWarmupGroupCosine);
  std::printf(
      "retrievals: %zu distinct top-%zu lists for %zu questions; questions at or above %.2f "
      "share %.2f of %zu documents on average\n",
      distinct.size(), agent.top_k, n, threshold, over ? shared / over : 0.0, agent.top_k);
}

struct Plan {
  std::size_t cold_windows, steady_windows, after_windows;
  std::size_t flood_requests;  // tenant a's requests measured in (d)
};

// (a) A fresh cache; the hit rate of each window from the start. Window 1 ends at the first
// tick, where a cold tenant is warmed up: its effect shows from window 2.
void cold_start(Tenant& a, double rate, const Plan& plan) {
  std::printf("\n(a) cold start: tenant a's hit rate per window, warm-up on vs off\n");
  for (const auto& cfg : kConfigs) {
    double first[2] = {};
    for (int on = 1; on >= 0; --on) {
      CacheOptions o = options_for(a.vector(0).size(), cfg);
      o.warmup = on;
      Run run(o, {&a});
      Regular reg(a, rate);
      reg.windows_pass(run, plan.cold_windows);
      auto s = run.cache().stats(a.name);
      first[on] = mean_rate(reg.windows, 1, 3);
      std::printf(
          "  %s warm-up %-3s:%s | stale %s | docs right %.2f/8 | warm-ups %llu, %llu entries\n",
          cfg.label, on ? "on" : "off", rates(reg.windows, 0, plan.cold_windows).c_str(),
          stale(reg.windows, 0, plan.cold_windows).c_str(),
          docs_right(reg.windows, 0, plan.cold_windows), (unsigned long long)s.warmups,
          (unsigned long long)s.warmed_entries);
    }
    std::printf("  %s windows 2-3 after the cold start: %.3f with warm-up, %.3f without (%s)\n",
                cfg.label, first[1], first[0], ratio(first[1], first[0]).c_str());
  }
}

// (b) After steady windows, the Zipf ranking rotates by half the pool: the formerly rare half
// of the questions becomes the popular one. The drift starts with a window.
void drift(Tenant& a, double rate, const Plan& plan) {
  std::printf(
      "\n(b) drift (the Zipf ranking rotated by %zu: rare questions trend): hit rate per window "
      "after it, warm-up on vs off\n",
      a.questions.size() / 2);
  for (const auto& cfg : kConfigs) {
    double after[2] = {};
    for (int on = 1; on >= 0; --on) {
      CacheOptions o = options_for(a.vector(0).size(), cfg);
      o.warmup = on;
      Run run(o, {&a});
      Regular reg(a, rate);
      reg.windows_pass(run, plan.steady_windows - 1);
      reg.next_shift = a.questions.size() / 2;
      reg.windows_pass(run, 1);
      const std::size_t from = reg.windows.size() - 1;  // the drift's first window
      const uint64_t warmups = run.cache().stats(a.name).warmups;
      reg.windows_pass(run, plan.after_windows);
      auto s = run.cache().stats(a.name);
      after[on] = mean_rate(reg.windows, from + 1, from + 3);
      std::printf(
          "  %s warm-up %-3s: before %.2f | after%s | stale %s | docs right %.2f/8 | warm-ups "
          "after the drift %llu (%llu entries in all)\n",
          cfg.label, on ? "on" : "off", reg.windows[from - 1].rate(),
          rates(reg.windows, from, from + plan.after_windows).c_str(),
          stale(reg.windows, from, from + plan.after_windows).c_str(),
          docs_right(reg.windows, from, from + plan.after_windows),
          (unsigned long long)(s.warmups - warmups), (unsigned long long)s.warmed_entries);
    }
    std::printf("  %s windows 2-3 after the drift: %.3f with warm-up, %.3f without (%s)\n",
                cfg.label, after[1], after[0], ratio(after[1], after[0]).c_str());
  }
}

// (c) After steady windows, two windows in which many users each ask a one-off variant (4 per
// regular request, Poisson), then the regular requests alone again.
void burst(Tenant& a, double rate, const Plan& plan) {
  const double burst_rate = 4 * rate;
  std::printf(
      "\n(c) burst: one-off variants from many users at %.0f/s (4x the regular rate) for 2 "
      "windows; the regular questions' hit rate, admission on vs off\n",
      burst_rate);
  // The same one-offs in every run: the regular stream, and so the burst's start, is the same.
  std::optional<OneOffs> oneoffs;
  for (const auto& cfg : kConfigs) {
    double during[2] = {}, after[2] = {};
    for (int on = 1; on >= 0; --on) {
      CacheOptions o = options_for(a.vector(0).size(), cfg);
      o.warmup = false;
      o.admission = on;
      Run run(o, {&a});
      Regular reg(a, rate);
      reg.windows_pass(run, plan.steady_windows);
      const std::size_t first = reg.windows.size() - 1;  // the burst's first window
      const int64_t start = run.now_ns();
      // Enough one-offs for two windows (each closes at the first request 5 s after the last).
      if (!oneoffs || oneoffs->from_ns != start)
        oneoffs.emplace(a, "burst:" + a.name, burst_rate, start, start + 12 * kSecond);
      uint64_t oneoff_hits = 0, oneoff_rejected = 0;
      std::size_t next = 0;
      auto burst_on = [&] { return reg.windows.size() < first + 3; };
      while (burst_on()) {
        while (burst_on() && next < oneoffs->queries.size() &&
               oneoffs->queries[next].at_ns < reg.arrivals.peek().at_ns) {
          const auto& q = oneoffs->queries[next];
          if (run.advance(q.at_ns)) reg.windows.emplace_back();
          auto served = run.serve(a, q.vector, nullptr, &oneoffs->value(a, next));
          oneoff_hits += served.hit;
          oneoff_rejected += served.rejected;
          ++next;
        }
        if (burst_on()) reg.step(run);
      }
      reg.windows_pass(run, plan.after_windows);
      const std::size_t end = first + 2 + plan.after_windows;
      during[on] = mean_rate(reg.windows, first, first + 2);
      after[on] = mean_rate(reg.windows, first + 2, end);
      std::printf(
          "  %s admission %-3s: before %.2f | during%s | after%s | one-offs %zu, %.2f of them "
          "hits, %llu stores rejected | regular stores rejected: during %llu, after %llu\n",
          cfg.label, on ? "on" : "off", reg.windows[first - 1].rate(),
          rates(reg.windows, first, first + 2).c_str(), rates(reg.windows, first + 2, end).c_str(),
          next, next ? double(oneoff_hits) / next : 0.0, (unsigned long long)oneoff_rejected,
          (unsigned long long)rejected(reg.windows, first, first + 2),
          (unsigned long long)rejected(reg.windows, first + 2, end));
    }
    std::printf(
        "  %s regular hit rate during the burst %.3f with admission, %.3f without (%s); after "
        "it %.3f vs %.3f (%s)\n",
        cfg.label, during[1], during[0], ratio(during[1], during[0]).c_str(), after[1], after[0],
        ratio(after[1], after[0]).c_str());
  }
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

// (d) Tenants a and b share one cache, each with the agent's base quota; b floods it with
// one-off variants (4 per a request). The daemon's competition index: a's misses are its own
// (0), b is the one filling shared memory (1). The caches with and without quotas run side by
// side, each event served by both in turn (the order alternating), so that what else runs on
// the machine lands on both alike.
void quotas(Tenant& a, Tenant& b, double rate, const Plan& plan) {
  const double flood_rate = 4 * rate;
  // Two windows to get past the cold start, then about flood_requests of a's requests.
  const int64_t period = options_for(a.vector(0).size(), kConfigs[0]).rebalance_period.count();
  const int64_t measured_from = 2 * period;
  const int64_t end = measured_from + static_cast<int64_t>(plan.flood_requests / rate * kSecond);
  std::printf(
      "\n(d) quotas: tenant a's requests (CPU time of lookup, and retrieval and store on a miss) "
      "while tenant b floods at %.0f one-offs/s for %.0f s, quotas on vs off\n",
      flood_rate, static_cast<double>(end) / kSecond);
  OneOffs flood(b, "flood:" + b.name, flood_rate, 0, end);
  const rag::PipelineConfig agent;
  for (const auto& cfg : kConfigs) {
    struct Side {
      Run run;
      std::vector<double> cpu;
      uint64_t hits = 0;
    };
    std::vector<std::unique_ptr<Side>> sides;  // [0] quotas off, [1] on
    for (int on = 0; on < 2; ++on) {
      CacheOptions o = options_for(a.vector(0).size(), cfg);
      o.warmup = false;
      o.quotas = on;
      sides.push_back(std::make_unique<Side>(Side{Run(o, {&a, &b}), {}, 0}));
      VectorCache& c = sides.back()->run.cache();
      c.set_competition(a.name, 0.0);
      c.set_competition(b.name, 1.0);
      c.rebalance();
    }
    Arrivals arr("arrivals:" + a.name, a.questions.size(), rate);
    arr.start(0);
    std::size_t next = 0;
    for (uint64_t i = 0; arr.peek().at_ns < end; ++i) {
      while (next < flood.queries.size() && flood.queries[next].at_ns < arr.peek().at_ns) {
        for (auto& side : sides) {
          side->run.advance(flood.queries[next].at_ns);
          side->run.serve(b, flood.queries[next].vector, nullptr, &flood.value(b, next));
        }
        ++next;
      }
      auto r = arr.pop();
      for (int k = 0; k < 2; ++k) {
        Side& side = *sides[(i + k) % 2];
        side.run.advance(r.at_ns);
        auto s = side.run.serve(a, a.vector(r.rank), nullptr);
        if (r.at_ns >= measured_from) {
          side.cpu.push_back(s.cpu_s);
          side.hits += s.hit;
        }
      }
    }
    double p99[2] = {};
    for (int on = 1; on >= 0; --on) {
      Side& side = *sides[on];
      auto sa = side.run.cache().stats(a.name), sb = side.run.cache().stats(b.name);
      const double entry =
          double(side.run.cache().entry_bytes(sizeof(rag::Neighbour) * agent.top_k));
      const std::size_t n = side.cpu.size();
      p99[on] = percentile(side.cpu, 0.99);
      std::printf(
          "  %s quotas %-3s: a's quota %.0f entries, hit rate %.3f, CPU per request P50 %.3f ms, "
          "P90 %.3f ms, P99 %.3f ms, mean %.3f ms (%zu requests); b: quota %.0f entries, %llu "
          "stored\n",
          cfg.label, on ? "on" : "off", sa.quota_bytes / entry, n ? double(side.hits) / n : 0.0,
          percentile(side.cpu, 0.5) * 1e3, percentile(side.cpu, 0.9) * 1e3, p99[on] * 1e3,
          mean(side.cpu) * 1e3, n, sb.quota_bytes / entry, (unsigned long long)sb.stored);
    }
    std::printf("  %s tenant a's P99 while b floods: %.3f ms with quotas, %.3f ms without (%s)\n",
                cfg.label, p99[1] * 1e3, p99[0] * 1e3, ratio(p99[0], p99[1]).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures as they come
  const rag::Options agent;
  // The agent's default offered rate per tenant, and what it serves per tenant when saturated
  // (bench/agent_overhead.py: two tenants, --concurrency 2, 72.7 req/s together on the 2-CPU
  // VM): the cache's fresh working set is rate x TTL, under or over its 128 entries.
  std::vector<double> rates = {agent.rate, 36};
  std::size_t vectors = agent.vectors;
  bool quick = false, vectors_given = false, rate_given = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--rate") && i + 1 < argc) {
      if (!rate_given) rates.clear();
      rate_given = true;
      rates.push_back(std::atof(argv[++i]));
      if (!(rates.back() > 0 && rates.back() < 1e6)) {
        std::fprintf(stderr, "agent_cache_bench: --rate must be a positive number\n");
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--vectors") && i + 1 < argc) {
      vectors = std::strtoul(argv[++i], nullptr, 10);
      vectors_given = true;
      if (vectors < 8) {
        std::fprintf(stderr, "agent_cache_bench: --vectors must be at least 8\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: agent_cache_bench [--quick] [--rate R]... [--vectors N]\n"
                   "  --quick      a short run: index of 10000 vectors, fewer windows, the "
                   "agent's default rate only\n"
                   "  --rate R     requests/s of tenant a (repeatable; default %g and 36)\n"
                   "  --vectors N  vectors in each tenant's index (default %zu)\n",
                   agent.rate, agent.vectors);
      return 2;
    }
  }
  if (quick && !vectors_given) vectors = 10000;
  if (quick && !rate_given) rates = {agent.rate};
  const Plan plan = quick ? Plan{4, 3, 3, 150} : Plan{8, 6, 6, 1500};
  try {
    TempDir dir;
    Tenant a("a", dir.path, vectors, agent.dim), b("b", dir.path, vectors, agent.dim);
    describe(a, vectors);
    for (double rate : rates) {
      std::printf(
          "\n=== tenant a at %g requests/s (Poisson); a window is the rebalance period, %g s of "
          "the injected clock ===\n",
          rate, std::chrono::duration<double>(CacheOptions{}.rebalance_period).count());
      cold_start(a, rate, plan);
      drift(a, rate, plan);
      burst(a, rate, plan);
      quotas(a, b, rate, plan);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agent_cache_bench: %s\n", e.what());
    return 1;
  }
}
