// SPDX-License-Identifier: Apache-2.0
#include "runq_peer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace tailcause::testing {
namespace {

constexpr const char* kTracefs = "/sys/kernel/tracing";
constexpr int kTracepoints = 4;
// What bpftrace prints on stderr once every probe is attached, when the environment asks.
constexpr const char* kAttached = "__BPFTRACE_NOTIFY_PROBES_ATTACHED";

// The tracepoint's prev_state for a task switched out by preemption (TASK_REPORT_MAX): still
// runnable, whatever state it was about to sleep in.
constexpr int kPreemptedState = 0x100;

std::string pid_test(const std::string& field, const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t p : pids) out += (out.empty() ? "" : " || ") + field + " == " + std::to_string(p);
  return "(" + out + ")";
}

// Wake-up (or preemption) to switch-in in nsecs, like the classic runqlat one-liner, with what
// the one-liner leaves out so that it measures the same thing as the daemon: a preempted task
// waits too (prev_state TASK_REPORT_MAX, not 0), a task that sleeps forgets a wake-up that came
// while it was still running, an earlier start is kept, idle tasks (pid 0) never count.
// Each wait is also timed on the run queue's clock (RunqPeerGroup::rq_clock_sum_ns): at both
// tracepoints rq->clock still holds what the kernel stamped the wait with, read through the
// current task (the previous one, at a switch), which is on the woken task's run queue when the
// wake-up is traced on its CPU.
std::string program(const std::vector<std::vector<pid_t>>& groups, pid_t gate_on, pid_t gate_off) {
  std::string group = "0";
  for (size_t i = groups.size(); i-- > 0;) {
    group = pid_test("args->next_pid", groups[i]) + " ? " + std::to_string(i + 1) + " : (" + group +
            ")";
  }
  const uint64_t slack = RunqPeerGroup::kSlackNs;
  const std::string rq_clock = "curtask->se.cfs_rq->rq->clock";
  std::ostringstream p;
  p << "tracepoint:sched:sched_wakeup,tracepoint:sched:sched_wakeup_new {\n"
    << "  $now = nsecs;\n"
    << "  if (args->pid == " << gate_on << ") { @on = 1; }\n"
    << "  if (@q[args->pid] == 0) {\n"
    << "    @q[args->pid] = $now; @pre[args->pid] = 0;\n"
    << "    if (cpu == args->target_cpu) { @r[args->pid] = " << rq_clock << "; }\n"
    << "    else { @r[args->pid] = 0; }\n"
    << "  }\n"
    << "}\n"
    << "tracepoint:sched:sched_switch {\n"
    << "  $now = nsecs;\n"
    << "  $clock = " << rq_clock << ";\n"
    << "  if (args->prev_pid != 0) {\n"
    << "    if (args->prev_state == 0 || args->prev_state == " << kPreemptedState << ") {\n"
    << "      @q[args->prev_pid] = $now; @r[args->prev_pid] = $clock; @pre[args->prev_pid] = 1;\n"
    << "    } else {\n"
    << "      delete(@q[args->prev_pid]); delete(@r[args->prev_pid]); "
       "delete(@pre[args->prev_pid]);\n"
    << "    }\n"
    << "  }\n"
    << "  $ts = @q[args->next_pid];\n"
    << "  if (args->next_pid != 0 && $ts != 0) {\n"
    << "    if (@on) {\n"
    << "      $ns = $now - $ts;\n"
    << "      $g = " << group << ";\n"
    << "      @h[$g] = hist($ns); @s[$g] = sum($ns);\n"
    << "      @shorter[$g] = hist($ns > " << slack << " ? $ns - " << slack << " : 0);\n"
    << "      @longer[$g] = hist($ns + " << slack << ");\n"
    << "      if (@pre[args->next_pid]) { @sp[$g] = sum($ns); }\n"
    << "      $r = @r[args->next_pid];\n"
    << "      if ($r != 0 && $clock >= $r) { @rc[$g] = sum($clock - $r); } else { @rc[$g] = "
       "sum($ns); }\n"
    << "    }\n"
    << "    delete(@q[args->next_pid]); delete(@r[args->next_pid]); delete(@pre[args->next_pid]);\n"
    << "  }\n"
    << "}\n"
    << "tracepoint:sched:sched_process_exit {\n"
    << "  delete(@q[args->pid]); delete(@r[args->pid]); delete(@pre[args->pid]);\n"
    << "  if (args->pid == " << gate_off << ") { @on = 0; }\n"
    << "}\n"
    << "END { clear(@q); clear(@r); clear(@pre); clear(@on); }\n";
  return p.str();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int bin_of(uint64_t ns) {
  const int slot = ns ? 63 - __builtin_clzll(ns) : 0;
  return std::clamp(slot, RunqDistribution::kFirstBin, RunqDistribution::kLastBin);
}

}  // namespace

double RunqDistribution::share_upto(int bin) const {
  uint64_t n = 0;
  for (int i = 0; i <= bin; ++i) n += bins[i];
  return count ? static_cast<double>(n) / count : 0;
}

RunqDistribution& RunqDistribution::operator+=(const RunqDistribution& o) {
  for (size_t i = 0; i < bins.size(); ++i) bins[i] += o.bins[i];
  count += o.count;
  sum_ns += o.sum_ns;
  return *this;
}

RunqDistribution RunqDistribution::minus(const RunqDistribution& before) const {
  RunqDistribution d = *this;
  for (size_t i = 0; i < bins.size(); ++i) d.bins[i] -= std::min(bins[i], before.bins[i]);
  d.count -= std::min(count, before.count);
  d.sum_ns -= before.sum_ns;
  return d;
}

RunqDistribution RunqDistribution::from_daemon(const core::HistogramData& h) {
  RunqDistribution d;
  uint64_t below = 0;
  for (const auto& [le, cumulative] : h.buckets) {
    const int slot = static_cast<int>(std::lround(std::log2(le * 1e9))) - 1;
    d.bins[std::clamp(slot, kFirstBin, kLastBin)] += cumulative - below;
    below = cumulative;
  }
  d.bins[kLastBin] += h.count - below;
  d.count = h.count;
  d.sum_ns = h.sum * 1e9;
  return d;
}

double RunqDistribution::max_share_gap(const RunqDistribution& a, const RunqDistribution& b) {
  double gap = 0;
  for (int i = kFirstBin; i <= kLastBin; ++i) {
    gap = std::max(gap, 100.0 * std::fabs(a.share(i) - b.share(i)));
  }
  return gap;
}

std::string RunqDistribution::table(const RunqDistribution& peer) const {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  for (int i = kFirstBin; i <= kLastBin; ++i) {
    if (!bins[i] && !peer.bins[i]) continue;
    out << "    " << (i == kFirstBin ? "< " : "") << (std::ldexp(1.0, i) / 1000) << "-"
        << (std::ldexp(1.0, i + 1) / 1000) << " us: daemon " << 100 * share(i) << "%, peer "
        << 100 * peer.share(i) << "%\n";
  }
  return out.str();
}

BpftraceRunqPeer::BpftraceRunqPeer(const std::vector<std::vector<pid_t>>& groups, pid_t gate_on,
                                   pid_t gate_off) {
  const bool have_tracefs = fs::exists(std::string(kTracefs) + "/events/sched") ||
                            fs::exists("/sys/kernel/debug/tracing/events/sched");
  if (!have_tracefs) {
    if (mount("nodev", kTracefs, "tracefs", 0, nullptr) != 0) {
      throw std::runtime_error(std::string("mount tracefs: ") + strerror(errno));
    }
    mounted_tracefs_ = true;
  }
  out_path_ = fs::temp_directory_path() / ("tailcause-runq-peer-" + std::to_string(getpid()));
  const std::string prog = program(groups, gate_on, gate_off);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open((out_path_ + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    setenv(kAttached, "1", 1);
    execlp("bpftrace", "bpftrace", "-f", "json", "-e", prog.c_str(), nullptr);
    _exit(127);
  }
  wait_attached();
}

BpftraceRunqPeer::~BpftraceRunqPeer() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  fs::remove(out_path_);
  fs::remove(out_path_ + ".err");
  if (mounted_tracefs_) umount2(kTracefs, 0);  // busy (someone else started using it): left
}

// bpftrace says when every probe is attached (its runtime tests' hook); without it, its
// attachments are counted: one perf event (0.17) or BPF link (newer) per tracepoint and CPU.
void BpftraceRunqPeer::wait_attached() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error(WIFEXITED(status) && WEXITSTATUS(status) == 127
                                   ? "bpftrace not found (scripts/install-deps.sh test installs it)"
                                   : "bpftrace exited before attaching: " +
                                         slurp(out_path_ + ".err"));
    }
    if (slurp(out_path_ + ".err").find(kAttached) != std::string::npos) return;
    long attached = 0;
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec)) {
      const std::string target = fs::read_symlink(fd.path(), ec).string();
      attached += target == "anon_inode:[perf_event]" || target == "anon_inode:bpf_link";
    }
    if (attached > kTracepoints * cpus) {  // and END
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("bpftrace did not attach within 60 s");
}

uint64_t BpftraceRunqPeer::recursion_misses() const {
  uint64_t misses = 0;
  std::error_code ec;
  const std::string proc = "/proc/" + std::to_string(pid_);
  for (const auto& fd : fs::directory_iterator(proc + "/fd", ec)) {
    if (fs::read_symlink(fd.path(), ec).string() != "anon_inode:bpf-prog") continue;
    std::ifstream info(proc + "/fdinfo/" + fd.path().filename().string());
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("recursion_misses:", 0) == 0) misses += std::stoull(line.substr(17));
    }
  }
  return misses;
}

std::map<int, RunqPeerGroup> BpftraceRunqPeer::stop() {
  misses_ = recursion_misses();
  // bpftrace now and then takes a SIGINT and stays in epoll_wait (seen once in CI, for 15
  // minutes; a second SIGINT ended it at once): ask again every 2 s, for a minute at most.
  bool exited = false;
  for (int tick = 0; tick < 600 && !exited; ++tick) {
    if (tick % 20 == 0) kill(pid_, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    exited = waitpid(pid_, nullptr, WNOHANG) == pid_;
  }
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("bpftrace did not exit within 60 s of SIGINT");
  }
  pid_ = -1;
  std::map<int, RunqPeerGroup> out;
  const std::map<std::string, RunqDistribution RunqPeerGroup::*> hists = {
      {"@h", &RunqPeerGroup::exact},
      {"@shorter", &RunqPeerGroup::shorter},
      {"@longer", &RunqPeerGroup::longer}};
  const std::map<std::string, std::function<double&(RunqPeerGroup&)>> sums = {
      {"@s", [](RunqPeerGroup& g) -> double& { return g.exact.sum_ns; }},
      {"@sp", [](RunqPeerGroup& g) -> double& { return g.preempted_sum_ns; }},
      {"@rc", [](RunqPeerGroup& g) -> double& { return g.rq_clock_sum_ns; }}};
  std::istringstream lines(slurp(out_path_));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_object()) continue;
    for (const auto& [name, groups] : j["data"].items()) {
      const auto sum = sums.find(name);
      if (sum != sums.end()) {
        for (const auto& [group, ns] : groups.items()) {
          sum->second(out[std::stoi(group)]) = ns.get<double>();
        }
      }
      const auto member = hists.find(name);
      if (member == hists.end()) continue;
      for (const auto& [group, buckets] : groups.items()) {
        RunqDistribution& d = out[std::stoi(group)].*(member->second);
        for (const auto& b : buckets) {
          const uint64_t n = b["count"].get<uint64_t>();
          d.bins[bin_of(std::max<int64_t>(0, b["min"].get<int64_t>()))] += n;
          d.count += n;
        }
      }
    }
  }
  if (out.empty()) {
    throw std::runtime_error("bpftrace printed no histogram: " + slurp(out_path_ + ".err"));
  }
  return out;
}

}  // namespace tailcause::testing
