// SPDX-License-Identifier: Apache-2.0
#include "supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cgroups.h"
#include "children.h"
#include "rng.h"
#include "summary.h"
#include "tenant_worker.h"
#include "tool_server.h"
#include "vector_index.h"

namespace rag {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string default_data_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::current_path() : exe.parent_path()).string() + "/data";
}

// SIGINT/SIGTERM/SIGCHLD arrive on a signalfd, so the supervisor handles them in its loop.
class SignalInbox {
 public:
  SignalInbox() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&set_, s);
    ::sigprocmask(SIG_BLOCK, &set_, nullptr);
    fd_ = ::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd_ < 0) throw std::runtime_error(fmt::format("signalfd: {}", std::strerror(errno)));
  }
  ~SignalInbox() { ::close(fd_); }
  int fd() const { return fd_; }
  // Drains pending signals; returns how many stop requests (SIGINT/SIGTERM) came in.
  int drain() {
    int stops = 0;
    signalfd_siginfo info;
    while (::read(fd_, &info, sizeof info) == sizeof info)
      if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM) ++stops;
    return stops;
  }

 private:
  sigset_t set_;
  int fd_ = -1;
};

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) return c;
  return 0;
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

int start_tool_server(ChildSet& children, const std::string& leaf, int threads) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  children.spawn("tool-server", fds[1], [&] {
    CgroupTree::join(leaf);
    unblock_signals();
    run_tool_server(fds[1], threads);
  });
  ::close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  char buf[16] = {};
  ssize_t n = ::poll(&p, 1, 10000) == 1 ? ::read(fds[0], buf, sizeof buf - 1) : -1;
  ::close(fds[0]);
  int port = n > 0 ? std::atoi(buf) : 0;
  if (port <= 0) throw std::runtime_error("the tool server did not start (no port within 10 s)");
  return port;
}

// One busy process per CPU, all on the victim's CPU, in their own cgroup next to the victim's.
void start_hogs(ChildSet& children, const std::string& leaf, int cpu) {
  unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i)
    children.spawn("hog", -1, [&] {
      CgroupTree::join(leaf);
      pin_self(cpu);
      unblock_signals();
      volatile double x = 1.0;
      while (true) x = x * 1.0000001 + 1e-9;
    });
}

// The cold-cache fault's disk: each miss of a dropped page cache costs a read from the disk, and
// this VM's disk answers from its host's cache in ~50 us, as fast as the run-queue wait after the
// read's wake-up on 2 busy CPUs. Limiting the tenant's reads to kColdReadIops makes a miss cost
// what a network block device's does (~0.25 ms), so the disk is what slows the retrieval.
// Returns the tenant's I/O leaf; "" (the fault then drops the cache alone) without a controller.
constexpr long kColdReadIops = 4000;

std::string slow_disk_for(CgroupTree& cgroups, const std::string& tenant,
                          const std::string& index_path) {
  const std::string leaf = cgroups.add_io_leaf(tenant);
  std::string why = cgroups.io_reason();
  if (!leaf.empty()) {
    try {
      cgroups.set_read_iops(leaf, index_path, kColdReadIops);
      spdlog::info("fault cold-cache: tenant {}'s reads limited to {} a second ({})", tenant,
                   kColdReadIops, leaf);
      return leaf;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  spdlog::warn(
      "fault cold-cache: tenant {}'s reads are not limited ({}): its misses cost what this "
      "machine's disk gives",
      tenant, why);
  return leaf;
}

struct WorkerSlot {
  std::string tenant;
  std::string cgroup;
  std::optional<int> pinned_cpu;
  pid_t pid = -1;
  int fd = -1;
  std::string output;
  bool eof = false, exited = false;
  int status = 0;
};

// Waits until every worker has exited and closed its pipe; forwards the first SIGINT/SIGTERM
// as SIGTERM (workers stop early and still report), SIGKILLs on a second one or when the
// workers overrun the duration by a minute.
bool wait_for_workers(std::vector<WorkerSlot>& workers, ChildSet& children, SignalInbox& signals,
                      double duration) {
  const auto hard_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(duration + 60.0));
  int stops = 0;
  bool killed = false;
  auto all_done = [&] {
    for (auto& w : workers)
      if (!w.eof || !w.exited) return false;
    return true;
  };
  while (!all_done()) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (auto& w : workers)
      if (!w.eof) fds.push_back({w.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    int new_stops = signals.drain();
    if (new_stops > 0 && stops == 0)
      spdlog::info("stopping early: signal received, tenants finish their requests");
    for (auto& w : workers) {
      if (new_stops > 0 && stops == 0) children.signal(w.pid, SIGTERM);
      if (new_stops > 0 && stops + new_stops > 1) children.signal(w.pid, SIGKILL);
    }
    stops += new_stops;
    for (auto& w : workers) {
      if (w.eof) continue;
      char buf[65536];
      ssize_t n = ::read(w.fd, buf, sizeof buf);
      if (n > 0)
        w.output.append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        w.eof = true, ::close(w.fd), w.fd = -1;
    }
    for (const auto& e : children.reap()) {
      for (auto& w : workers)
        if (w.pid == e.pid) w.exited = true, w.status = e.status;
      if (e.role != "tenant")
        spdlog::warn("{} (pid {}) exited unexpectedly with status {:#x}", e.role, e.pid, e.status);
    }
    if (!killed && Clock::now() > hard_deadline) {
      spdlog::error("tenant workers overran --duration by 60 s: killing them");
      for (auto& w : workers) children.signal(w.pid, SIGKILL);
      killed = true;
    }
  }
  return stops > 0;
}

}  // namespace

int run_agent(const Options& o) {
  SignalInbox signals;  // first: from here on a signal cannot skip the cleanup below
  CgroupTree cgroups(o.cgroup_root);
  if (cgroups.mode() == CgroupMode::None) {
    spdlog::warn(
        "no cgroup of our own ({}): tenants share the agent's cgroup, so the kernel cannot tell "
        "them apart",
        cgroups.reason());
    if (o.has_fault(FaultKind::Quota))
      throw std::runtime_error(
          "--fault quota needs a cgroup of its own for the tenant (run as root)");
  } else {
    spdlog::info("tenant cgroups under {} (cgroup {})", cgroups.dir(),
                 cgroup_mode_name(cgroups.mode()));
  }

  const std::string data_dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  fs::create_directories(data_dir);
  for (const auto& t : o.tenants) {
    auto t0 = Clock::now();
    std::string path = fmt::format("{}/index-{}.f32", data_dir, t);
    if (ensure_index_file(path, o.vectors, o.dim, fnv1a("index:" + t)))
      spdlog::info("generated {} ({} vectors x {} floats) in {:.1f} s", path, o.vectors, o.dim,
                   std::chrono::duration<double>(Clock::now() - t0).count());
    if (signals.drain() > 0) {
      spdlog::info("interrupted while preparing the index files");
      return 1;
    }
  }

  ChildSet children;  // after cgroups: destroyed first, so the cgroups are empty when removed
  const int tool_port = start_tool_server(children, cgroups.add_leaf("_tools"),
                                          static_cast<int>(o.tenants.size()) * o.concurrency + 4);
  spdlog::info("tool server on 127.0.0.1:{}", tool_port);

  const int victim_cpu = first_allowed_cpu();
  std::vector<WorkerSlot> workers;
  for (const auto& t : o.tenants) {
    WorkerSlot slot;
    slot.tenant = t;
    slot.cgroup = cgroups.add_leaf(t);
    if (o.has_fault(FaultKind::Quota, t)) {
      cgroups.set_cpu_quota(slot.cgroup, 10000, 100000);
      spdlog::info("fault quota: tenant {} limited to 10% of a CPU", t);
    }
    if (o.has_fault(FaultKind::Hog, t)) {
      slot.pinned_cpu = victim_cpu;
      // A heavy neighbour, as a batch job given priority over the agent would be: ten times
      // the default CPU weight, so the scheduler favours it on the shared CPU.
      const std::string hog_leaf = cgroups.add_leaf("_hog-" + t);
      if (!hog_leaf.empty()) cgroups.set_cpu_weight(hog_leaf, 10240, 1000);
      start_hogs(children, hog_leaf, victim_cpu);
      spdlog::info("fault hog: CPU hogs compete with tenant {} on CPU {}", t, victim_cpu);
    }
    const std::string index_path = fmt::format("{}/index-{}.f32", data_dir, t);
    std::string io_leaf;
    if (o.has_fault(FaultKind::ColdCache, t)) io_leaf = slow_disk_for(cgroups, t, index_path);
    TenantSpec spec{t,
                    index_path,
                    slot.cgroup,
                    io_leaf,
                    slot.pinned_cpu,
                    o.rate,
                    o.concurrency,
                    o.duration,
                    tool_port,
                    o.has_fault(FaultKind::ColdCache, t),
                    o.has_fault(FaultKind::SlowPeer, t),
                    o.has_fault(FaultKind::Lock, t),
                    o.has_fault(FaultKind::Entropy, t),
                    o.has_fault(FaultKind::CacheBust, t),
                    o.shed_when_open,
                    o.cache_loop,
                    o.cache_entries,
                    o.nprobe};
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
    ::fcntl(fds[1], F_SETFL, 0);  // the worker writes blocking; we read non-blocking
    slot.pid = children.spawn("tenant", fds[1], [&] { run_tenant_worker(spec, fds[1]); });
    ::close(fds[1]);
    slot.fd = fds[0];
    workers.push_back(std::move(slot));
  }
  spdlog::info("serving {} tenant(s) at {} req/s each with {} worker thread(s) for {} s",
               o.tenants.size(), o.rate, o.concurrency, o.duration);

  bool interrupted = wait_for_workers(workers, children, signals, o.duration);
  children.kill_all();  // tool server and hogs

  nlohmann::json report = {{"agent", "rag-agent"},
                           {"pid", ::getpid()},
                           {"duration_seconds", o.duration},
                           {"rate", o.rate},
                           {"concurrency", o.concurrency},
                           {"vectors", o.vectors},
                           {"dim", o.dim},
                           {"data_dir", data_dir},
                           {"interrupted", interrupted},
                           {"tool_port", tool_port},
                           {"faults", nlohmann::json::array()},
                           {"tenants", nlohmann::json::object()}};
  for (const auto& f : o.faults)
    report["faults"].push_back({{"kind", fault_kind_name(f.kind)}, {"tenant", f.tenant}});
  bool all_ok = true;
  for (auto& w : workers) {
    nlohmann::json t = nlohmann::json::parse(w.output, nullptr, false);
    if (t.is_discarded() || !t.is_object()) t = {{"error", "no result from the tenant worker"}};
    bool clean_exit = WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
    if (!clean_exit && !t.contains("error"))
      t["error"] = WIFSIGNALED(w.status)
                       ? fmt::format("killed by signal {}", WTERMSIG(w.status))
                       : fmt::format("exited with status {}", WEXITSTATUS(w.status));
    all_ok = all_ok && !t.contains("error");
    auto th = cgroups.read_throttle(w.cgroup);
    t["cgroup"] = w.cgroup;
    t["pinned_cpu"] = w.pinned_cpu ? nlohmann::json(*w.pinned_cpu) : nlohmann::json(nullptr);
    t["throttle"] = {{"periods", th.periods},
                     {"throttled_periods", th.throttled_periods},
                     {"throttled_seconds", th.throttled_seconds}};
    report["tenants"][w.tenant] = std::move(t);
  }
  const std::string cgroup_dir = cgroups.dir();
  cgroups.remove();
  struct stat st;
  report["cgroup"] = {{"mode", cgroup_mode_name(cgroups.mode())},
                      {"dir", cgroup_dir},
                      {"removed", cgroup_dir.empty() || ::stat(cgroup_dir.c_str(), &st) != 0}};

  print_summary(report);
  if (!o.report_path.empty()) {
    std::ofstream out(o.report_path);
    out << report.dump(2) << "\n";
    if (!out) throw std::runtime_error(fmt::format("cannot write the report to {}", o.report_path));
  }
  return all_ok ? 0 : 1;
}

}  // namespace rag
