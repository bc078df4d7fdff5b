// SPDX-License-Identifier: Apache-2.0
#include "tenant_worker.h"

#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fmt/format.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "breaker_gate.h"
#include "cgroups.h"
#include "pipeline.h"
#include "query_source.h"
#include "rng.h"

namespace rag {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop.store(true); }

struct Pending {
  uint64_t id;
  uint32_t question;
  Clock::time_point arrival;
};

// Arrivals waiting for a worker thread. Bounded: when workers fall this far behind, new arrivals
// are dropped and counted rather than queued without limit.
class RequestQueue {
 public:
  static constexpr std::size_t kMaxQueued = 10000;
  bool push(Pending p) {
    {
      std::lock_guard lock(mu_);
      if (q_.size() >= kMaxQueued) return false;
      q_.push_back(p);
    }
    cv_.notify_one();
    return true;
  }
  std::optional<Pending> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (closed_) return std::nullopt;  // shutdown: what is still queued is abandoned
    Pending p = q_.front();
    q_.pop_front();
    return p;
  }
  std::size_t close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
    return q_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> q_;
  bool closed_ = false;
};

std::string new_trace_id(std::mt19937_64& rng) {
  uint64_t hi = rng(), lo = rng();
  if (hi == 0 && lo == 0) lo = 1;  // all-zero trace ids are invalid in W3C trace context
  return fmt::format("{:016x}{:016x}", hi, lo);
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n, left -= static_cast<std::size_t>(n);
  }
}

nlohmann::json run_load(const TenantSpec& spec) {
  PipelineConfig config;
  config.tenant = spec.name;
  config.index_path = spec.index_path;
  config.tool_port = spec.tool_port;
  config.cold_cache = spec.cold_cache;
  config.slow_peer = spec.slow_peer;
  config.entropy = spec.entropy;
  config.cache_bust = spec.cache_bust;
  config.cache_loop = spec.cache_loop;
  config.cache_entries = spec.cache_entries;
  config.nprobe = spec.nprobe;
  RagPipeline pipeline(config);
  QuestionPicker picker(pipeline.questions());

  // The lock fault: a "compactor" that holds the KV-cache mutex for 25 ms after every 4 tokens
  // appended, so generation's per-token append waits on a contended futex: 96 tokens wait at
  // least 23 x 25 ms, however fast the CPU.
  std::thread compactor;
  if (spec.lock)
    compactor =
        std::thread([&] { pipeline.kv_cache().run_compactor(4, std::chrono::milliseconds(25)); });

  RequestQueue queue;
  std::vector<std::thread> workers;
  std::vector<std::unique_ptr<WorkerState>> states;
  for (int i = 0; i < spec.concurrency; ++i)
    states.push_back(std::make_unique<WorkerState>(spec.tool_port));
  for (int i = 0; i < spec.concurrency; ++i)
    workers.emplace_back([&, i] {
      std::mt19937_64 trace_rng(std::random_device{}());
      while (auto p = queue.pop()) {
        auto start = Clock::now();
        bool ok = pipeline.serve(*states[i], p->id, new_trace_id(trace_rng), p->question);
        if (!ok) continue;
        auto end = Clock::now();
        pipeline.stats().add("queue", std::chrono::duration<double>(start - p->arrival).count());
        pipeline.stats().add("request", std::chrono::duration<double>(end - p->arrival).count());
      }
    });

  // Open loop: Poisson arrivals at --rate, whatever the workers' progress.
  const double cpu_at_start = cpu_seconds();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(spec.duration));
  SplitMix arrivals(fnv1a("arrivals:" + spec.name));
  uint64_t offered = 0, dropped = 0, shed = 0;
  BreakerGate gate(spec.name, spec.shed_when_open);
  const uint64_t id_base = static_cast<uint64_t>(::getpid()) << 32;
  auto next = t0;
  while (!g_stop.load()) {
    auto now = Clock::now();
    if (now >= deadline) break;
    if (next < deadline && now >= next) {
      ++offered;
      if (gate.open()) {
        ++shed;  // the daemon saw this tenant's stages stay slow: shed load until it recovers
      } else if (!queue.push(Pending{id_base | offered, picker.pick(arrivals.uniform()), next}))
        ++dropped;
      double gap = -std::log(1.0 - arrivals.uniform()) / spec.rate;
      next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap));
      continue;
    }
    // Short sleeps, so a stop signal is seen within 50 ms.
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::min(next, deadline) - now, std::chrono::milliseconds(50)));
  }
  std::size_t abandoned = queue.close();
  for (auto& w : workers) w.join();
  pipeline.kv_cache().stop_compactor();
  if (compactor.joinable()) compactor.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu_at_start;

  const auto& c = pipeline.counters();
  uint64_t completed = c.completed.load();
  nlohmann::json loop = nullptr;  // without --cache-loop
  pipeline.stop_cache_loop();
  if (auto f = pipeline.loop_stats()) {
    const auto cs = pipeline.cache_stats();
    loop = {{"polls", f->polls},
            {"unanswered", f->unanswered},
            {"breakdowns", f->breakdowns},
            {"warmups", f->warmups},
            {"warmed_entries", f->warmed_entries},
            {"rebalances", f->rebalances},
            // The library's own counts: one cache_action probe per warm-up batch and per
            // rebalance, so the daemon's counters must equal these.
            {"library",
             {{"warmup_batches", cs.warmups},
              {"warmed_entries", cs.warmed_entries},
              {"rebalances", cs.rebalances},
              {"base_quota_bytes", cs.base_quota_bytes},
              {"quota_bytes", cs.quota_bytes}}}};
  }
  return {{"tenant", spec.name},
          {"pid", ::getpid()},
          {"interrupted", g_stop.load()},
          {"wall_seconds", wall},
          {"requests",
           {{"offered", offered},
            {"completed", completed},
            {"failed", c.failed.load()},
            {"dropped", dropped},
            {"shed", shed},
            {"abandoned", abandoned}}},
          {"stages", pipeline.stats().summary()},
          {"cache",
           {{"hit", c.cache_hit.load()},
            {"miss", c.cache_miss.load()},
            {"stale", c.cache_stale.load()}}},
          {"cache_loop", loop},
          {"breaker",
           {{"checks", gate.checks()},
            {"open_seen", gate.open_seen()},
            {"unreadable", gate.unreadable()}}},
          {"tokens", c.tokens.load()},
          {"output_tokens_per_request", pipeline.config().output_tokens},
          {"index_bytes_read", pipeline.index_bytes_read()},
          {"cpu_seconds", cpu},
          {"cpu_seconds_per_request", completed ? cpu / static_cast<double>(completed) : 0.0}};
}

}  // namespace

void run_tenant_worker(const TenantSpec& spec, int result_fd) {
  spdlog::set_pattern(fmt::format("%H:%M:%S.%e [tenant {}] %^%l%$ %v", spec.name));
  nlohmann::json result;
  int code = 0;
  try {
    // Into the tenant's cgroup and onto its CPU before any thread exists, so all of them
    // inherit both.
    CgroupTree::join(spec.cgroup_leaf);
    CgroupTree::join(spec.io_leaf);  // v1: another hierarchy; v2: the same leaf again
    if (spec.pin_cpu) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(*spec.pin_cpu, &set);
      if (::sched_setaffinity(0, sizeof set, &set) != 0)
        throw std::runtime_error(
            fmt::format("pin to CPU {}: {}", *spec.pin_cpu, std::strerror(errno)));
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    ::sigaction(SIGTERM, &sa, nullptr);  // the supervisor's way to stop us early
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    result = run_load(spec);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    result = {{"tenant", spec.name}, {"pid", ::getpid()}, {"error", e.what()}};
    code = 1;
  }
  write_all(result_fd, result.dump());
  ::close(result_fd);
  std::fflush(stdout);
  ::_exit(code);
}

}  // namespace rag
