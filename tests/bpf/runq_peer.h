// SPDX-License-Identifier: Apache-2.0
// An independent ktime measure of run-queue latency for the sched tests: bpftrace, timing each
// wait from wake-up (or preemption) to switch-in with nsecs, as the classic one-liner does.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/record/metrics.h"

namespace tailcause::testing {

// Waits by log2 bin of nanoseconds, as the daemon exports them: bin i counts [2^i, 2^(i+1)) ns;
// bin kFirstBin also holds everything shorter, bin kLastBin everything longer.
struct RunqDistribution {
  static constexpr int kFirstBin = 9;  // the daemon's first bucket: le 1.024 us
  static constexpr int kLastBin = 35;
  std::array<uint64_t, kLastBin + 1> bins{};
  uint64_t count = 0;
  double sum_ns = 0;

  double mean_ns() const { return count ? sum_ns / count : 0; }
  double share(int bin) const { return count ? static_cast<double>(bins[bin]) / count : 0; }
  double share_upto(int bin) const;  // share of the waits in bins up to `bin`
  RunqDistribution& operator+=(const RunqDistribution& o);
  // `this` minus an earlier reading of the same counters.
  RunqDistribution minus(const RunqDistribution& before) const;
  // From a daemon histogram (cumulative buckets le 2^(i+1) ns, seconds).
  static RunqDistribution from_daemon(const core::HistogramData& h);
  // Largest difference of per-bin shares, in points (0-100).
  static double max_share_gap(const RunqDistribution& a, const RunqDistribution& b);
  std::string table(const RunqDistribution& peer) const;  // side by side, for the test log
};

// What the peer measured for one group of threads: the distribution, and the same waits
// `kSlackNs` shorter and longer. Two tracers on the same tracepoints delay each other's
// timestamps by their programs' run time, which is not the same at the wake-up and at the
// switch: measured here, the means differ by up to 300 ns, enough to move
// waits that cluster near a bucket boundary across it.
struct RunqPeerGroup {
  static constexpr uint64_t kSlackNs = 500;
  RunqDistribution exact, shorter, longer;
  // Of `exact`'s waits, the sum of those that began with a preemption (the rest began with a
  // wake-up).
  double preempted_sum_ns = 0;
  // `exact`'s waits timed on the run queue's clock at the same tracepoints: the stamps the
  // kernel's schedstat takes (rq_clock at the enqueue, at the preemption and at the switch-in),
  // so this is the kernel's sum for the same waits, and exact.sum_ns minus this is how far the
  // tracepoints' stamps lag the kernel's. Only where the wake-up is traced on the woken task's
  // CPU (else that wait counts its ktime): meaningful for threads woken on their own CPU.
  double rq_clock_sum_ns = 0;
};

// bpftrace running a run-queue latency program, one distribution per group of thread ids
// (group 0: every other thread of the node), counted only between `gate_on` being woken and
// `gate_off` exiting. Mounts tracefs for the run if it is missing (bpftrace reads the
// tracepoint formats there) and unmounts it afterwards.
class BpftraceRunqPeer {
 public:
  BpftraceRunqPeer(const std::vector<std::vector<pid_t>>& groups, pid_t gate_on, pid_t gate_off);
  ~BpftraceRunqPeer();
  BpftraceRunqPeer(const BpftraceRunqPeer&) = delete;
  BpftraceRunqPeer& operator=(const BpftraceRunqPeer&) = delete;

  // Stops bpftrace (SIGINT) and reads its maps: group number (1-based; 0: the rest) to what it
  // measured.
  std::map<int, RunqPeerGroup> stop();
  // Events its programs missed, read at stop(): the kernel skips a perf-event program while
  // another such program (or a BPF system call) holds the CPU.
  uint64_t misses() const { return misses_; }

 private:
  void wait_attached();
  uint64_t recursion_misses() const;
  uint64_t misses_ = 0;
  pid_t pid_ = -1;
  std::string out_path_;
  bool mounted_tracefs_ = false;
};

}  // namespace tailcause::testing
