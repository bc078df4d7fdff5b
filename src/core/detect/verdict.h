// SPDX-License-Identifier: Apache-2.0
// Why a glitch was slow: the component(s) whose time exceeds what the stage normally spends
// in them, with a one-line human evidence string, e.g.
//   "generation 1.42 s, 63% cpu_throttled: 12 throttled periods"
//   "retrieval 480 ms, 71% block_io: 1,240 page-cache misses"
//   "tool 2.1 s, 95% network: peer 10.0.0.7:443"
// Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/host/evidence_board.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

// The normal shape of a (tenant, stage): mean wall time and mean fraction of it per component
// over non-glitch stages. The mean is cumulative until `horizon` samples, then exponentially
// weighted (weight 1/horizon), so it follows slow drift in bounded memory.
class ComponentProfile {
 public:
  explicit ComponentProfile(uint64_t horizon = 1000) : horizon_(horizon ? horizon : 1) {}
  void add(const StageRecord& r);
  uint64_t samples() const { return samples_; }
  double mean_wall_ns() const { return mean_wall_ns_; }
  double fraction(Component c) const { return fractions_[static_cast<size_t>(c)]; }

 private:
  uint64_t horizon_;
  uint64_t samples_ = 0;
  double mean_wall_ns_ = 0;
  std::array<double, kComponents> fractions_{};
};

// Extra evidence the caller may know from other probes; each is appended to the component it
// explains when that component is named in the verdict.
struct EvidenceHints {
  std::optional<uint64_t> throttled_periods;     // cpu_throttled: CFS periods throttled ...
  std::optional<uint64_t> periods;               // ... of this many periods with work
  std::optional<std::string> cgroup;             // ... of this cgroup
  std::optional<double> quota_cpus;              // ... limited to this many CPUs
  bool throttled_before_stage = false;           // ... read just before the stage began
  std::optional<std::string> preempting_cgroup;  // runqueue: who held the CPU
  double runqueue_share = 0;         // runqueue: the cgroup's tasks' run-queue wait over the window
                                     // the preemptions were read in (its length, not a CPU's time)
  std::optional<std::string> peer;   // network: the remote end (else the
                                     // record's own network_peer)
  std::optional<std::string> qdisc;  // network: the qdisc over its limit
  std::optional<std::string> lock_name;        // lock: what was contended
  std::optional<std::string> memory_pressure;  // block_io: its memory cgroup reclaiming
  std::optional<std::string> disk_user;        // block_io: whose I/O kept the disk busy
};

struct Culprit {
  Component component;
  uint64_t ns = 0;           // time in the component during this stage
  double share_of_wall = 0;  // ns / wall time
  double excess_ns = 0;      // ns minus what the normal profile predicts
};

struct Verdict {
  std::vector<Culprit> culprits;  // largest excess first; empty when nothing stands out
  std::string evidence;
};

struct VerdictOptions {
  // Secondary culprits are named when their excess is at least this share of the total.
  double secondary_share = 0.25;
  size_t max_culprits = 2;
};

// Attributes the stage's excess over `normal` (nullptr or empty: no history, so the largest
// components are the culprits) to its components.
Verdict explain(const StageRecord& r, const ComponentProfile* normal,
                const EvidenceHints& hints = {}, const VerdictOptions& options = {});

// "1.42 s", "480 ms", "35 us": three significant digits.
std::string format_duration(uint64_t ns);
// "2 MiB", "14.2 MiB", "512 KiB", "900 B".
std::string format_bytes(double bytes);
// "memory cgroup /agents/ta at its 2 MiB limit, reclaiming 14 MiB/s" (at its limit: usage at
// 90% of it or more; "at 60% of its 2 MiB limit" below; no limit: just the reclaim), then the
// share of the interval some task stalled on memory (PSI "some"), when any: the cgroup's own
// ", tasks stalled on memory 23% of the time (PSI)", or the node's, where the cgroup has no
// pressure file (v1), "; node memory stall 12% (PSI)".
std::string describe_memory_pressure(const std::string& cgroup, const MemoryEvidence& e);
// "disk vda busy with cgroup /batch's I/O (92% of its request time, 412 MB)"
std::string describe_disk_user(const DiskEvidence& e);
// "qdisc tbf 8001: on lo over its limit 312 times (2.1 MiB sent, backlog 14 KiB)", with
// ", dropped 12 packets" after the overlimits when it dropped; a qdisc that only queued up:
// "qdisc fq_codel 0: on eth0 queueing (backlog 14 KiB)".
std::string describe_qdisc(const QdiscEvidence& e);
// Whether a network peer label ("127.0.0.1:8080", "[::1]:80", core::peer_label's form) is a
// loopback address, whose traffic leaves through "lo".
bool is_loopback_peer(const std::string& peer);
// 1240 -> "1,240".
std::string format_count(uint64_t n);

}  // namespace tailcause::core
