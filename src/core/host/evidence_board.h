// SPDX-License-Identifier: Apache-2.0
// Evidence the probe families leave for the verdicts: per cgroup, when it was throttled (from
// cpu.stat reads), who preempted its tasks (from the preemption matrix), how much its memory
// cgroup reclaimed and how long tasks stalled on memory meanwhile (PSI), and node-wide whose I/O
// kept the disks busy and which network device's qdisc was over its limit, as short
// time-stamped histories, so a glitch that ended a moment ago can
// be explained by what happened during it. Written by the families' ticks and read by the
// analyzer, both on the collector thread. Bounded: a few minutes of samples per cgroup, at most
// max_cgroups cgroups. Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tailcause::core {

struct ThrottleEvidence {
  uint64_t periods = 0;              // enforcement periods with runnable tasks in the interval
  uint64_t throttled = 0;            // of those, throttled
  std::optional<double> quota_cpus;  // quota / period, when limited
  bool before_stage = false;         // no reading fell inside the stage: the interval read
                                     // just before it began
};

// Where a memory stall reading (PSI, core/host/psi.h) came from: the memory cgroup's own
// memory.pressure (v2), or the node's /proc/pressure/memory (a v1 memory cgroup has none).
enum class StallScope : uint8_t { none, cgroup, node };

// A memory stall reading: cumulative PSI totals (microseconds) and their scope.
struct MemoryStall {
  uint64_t some_us = 0;  // time at least one task (of the cgroup, or of the node) was stalled
  uint64_t full_us = 0;  // time all non-idle tasks were at once
  StallScope scope = StallScope::none;
  bool operator==(const MemoryStall&) const = default;
};

// Reclaim forced by a memory cgroup's limit (the kernel's memcg reclaim, timed by BPF) over an
// interval, where the cgroup stood against its limit at the end of it, and the memory stall
// (PSI) over the same interval, the cgroup's own or the node's.
struct MemoryEvidence {
  uint64_t reclaimed_bytes = 0;
  uint64_t reclaim_ns = 0;              // time the cgroup's tasks spent reclaiming
  double seconds = 0;                   // the interval the figures cover
  uint64_t usage_bytes = 0;             // charged to the cgroup at the end of the interval
  std::optional<uint64_t> limit_bytes;  // its limit, when it has one
  bool before_stage = false;            // as in ThrottleEvidence
  // PSI stall time in the interval (deltas of MemoryStall); 0 and scope none when either end
  // had no reading, or the two came from different files.
  uint64_t stall_some_us = 0;
  uint64_t stall_full_us = 0;
  StallScope stall_scope = StallScope::none;
  double reclaim_bytes_per_s() const { return seconds > 0 ? reclaimed_bytes / seconds : 0; }
  // The share of the interval some task was stalled on memory, in [0, 1].
  double stall_some_share() const {
    return seconds > 0 ? std::min(1.0, static_cast<double>(stall_some_us) * 1e-6 / seconds) : 0;
  }
};

struct PreemptionEvidence {
  std::string by_cgroup;
  uint64_t wait_ns = 0;        // run-queue wait spent mostly behind that cgroup's tasks
  uint64_t total_wait_ns = 0;  // ... anyone's
  uint64_t preemptions = 0;    // by that cgroup in the interval
  uint64_t total = 0;          // by anyone
};

// Whose I/O kept the node's disks busy over an interval (from the block family's per-cgroup
// request times): the busiest cgroup other than the one asking, and everyone's total.
struct DiskEvidence {
  std::string cgroup;
  std::string device;          // the disk that cgroup used most
  uint64_t busy_ns = 0;        // its requests' time from issue to completion, summed
  uint64_t bytes = 0;          // their bytes
  uint64_t total_busy_ns = 0;  // every cgroup's requests, the asking one's included
};

// A qdisc (traffic control queueing discipline) over an interval, from its rtnetlink statistics
// (TCA_STATS2): what it sent, how often it held packets back for being over its limit
// (overlimits: a shaper's rate, a policer's burst), what it dropped, and its queue.
struct QdiscDelta {
  uint64_t bytes = 0;  // sent in the interval
  uint64_t packets = 0;
  uint64_t overlimits = 0;     // times a packet was held back for being over the limit
  uint64_t drops = 0;          // packets dropped
  uint64_t backlog_bytes = 0;  // queued at the end of the interval (a gauge)
  uint64_t qlen = 0;           // packets queued then
  bool backlog_grew = false;   // the queue was longer at the end than at the start
  // Whether the qdisc slowed anything in the interval: over its limit, dropping or queueing up.
  bool acted() const { return overlimits > 0 || drops > 0 || backlog_grew; }
};

// The qdisc that held the most traffic back on a device over a stage.
struct QdiscEvidence {
  std::string device;  // "lo", "eth0"
  std::string kind;    // "tbf", "htb", "fq_codel"
  std::string handle;  // "8001:"
  uint64_t overlimits = 0, drops = 0, bytes = 0, packets = 0;
  uint64_t backlog_bytes = 0;  // the longest queue read in the interval
  uint64_t intervals = 0;      // readings that found it acting
};

class EvidenceBoard {
 public:
  explicit EvidenceBoard(uint64_t keep_ns = 300'000'000'000, size_t max_cgroups = 4096);

  // A cpu.stat read: cumulative counters, CLOCK_MONOTONIC time.
  void add_throttle_sample(const std::string& cgroup, uint64_t now_ns, uint64_t nr_periods,
                           uint64_t nr_throttled, std::optional<double> quota_cpus);
  // Throttling over [start, end]: the samples bracketing it (the last at or before start, the
  // first at or after end, or the newest when none is yet). nullopt without two samples.
  std::optional<ThrottleEvidence> throttle_between(const std::string& cgroup, uint64_t start_ns,
                                                   uint64_t end_ns) const;

  // A memory cgroup's cumulative reclaim counters and its usage and limit, read now, with the
  // memory stall totals read with them (nullopt where PSI could not be read).
  void add_memory_sample(const std::string& cgroup, uint64_t now_ns, uint64_t reclaimed_bytes,
                         uint64_t reclaim_ns, uint64_t usage_bytes,
                         std::optional<uint64_t> limit_bytes,
                         std::optional<MemoryStall> stall = std::nullopt);
  // Reclaim over [start, end], bracketed as throttle_between does; nullopt without two samples
  // or when nothing was reclaimed. The stall is the same two samples' difference.
  std::optional<MemoryEvidence> memory_between(const std::string& cgroup, uint64_t start_ns,
                                               uint64_t end_ns) const;
  bool has_memory_samples() const { return !memory_.empty(); }

  // Preemptions of `victim`'s tasks by `by`'s since the previous call, and the run-queue wait
  // of `victim`'s tasks spent mostly behind `by`'s (deltas; either may be 0).
  void add_preemptions(const std::string& victim, const std::string& by, uint64_t now_ns,
                       uint64_t count, uint64_t wait_ns);
  // Whose preemptions cost `victim` the most run-queue time in [start - slack, end + slack]
  // (ranked by time, not count: a few long waits behind a hog outweigh many short ones; deltas
  // are stamped when read, up to a tick after they happened).
  std::optional<PreemptionEvidence> top_preemptor(const std::string& victim, uint64_t start_ns,
                                                  uint64_t end_ns,
                                                  uint64_t slack_ns = 1'100'000'000) const;

  // I/O that `cgroup`'s tasks issued to `device` since the previous call (deltas).
  void add_disk_io(const std::string& cgroup, const std::string& device, uint64_t now_ns,
                   uint64_t bytes, uint64_t busy_ns);
  // The cgroup other than `victim` whose requests took the most disk time in
  // [start - slack, end + slack]; nullopt when no other cgroup did I/O then.
  std::optional<DiskEvidence> top_disk_user(const std::string& victim, uint64_t start_ns,
                                            uint64_t end_ns,
                                            uint64_t slack_ns = 1'100'000'000) const;

  // A qdisc's statistics since the previous reading. Kept only when it acted (QdiscDelta::acted),
  // so a node's quiet qdiscs cost nothing.
  void add_qdisc(const std::string& device, const std::string& kind, const std::string& handle,
                 uint64_t now_ns, const QdiscDelta& delta);
  // The qdisc that held traffic back the most (overlimits plus drops, then backlog) in
  // [start - slack, end + slack] on one of `devices` (empty: any device but those in `except`),
  // bracketed as top_disk_user: deltas are stamped when read, a second apart, and a stage shorter
  // than that, judged when it ends, may have none inside it yet, so the reading just before it
  // counts. nullopt when none acted.
  std::optional<QdiscEvidence> qdisc_over_limit(const std::vector<std::string>& devices,
                                                const std::vector<std::string>& except,
                                                uint64_t start_ns, uint64_t end_ns,
                                                uint64_t slack_ns = 1'100'000'000) const;
  size_t qdisc_samples() const { return qdisc_.size(); }

  // Drops samples older than keep_ns before now, and cgroups left with none.
  void expire(uint64_t now_ns);
  size_t cgroups() const;
  uint64_t refused() const { return refused_; }  // samples dropped for lack of room

 private:
  struct ThrottleSample {
    uint64_t time_ns, periods, throttled;
    std::optional<double> quota_cpus;
  };
  struct MemorySample {
    uint64_t time_ns, reclaimed_bytes, reclaim_ns, usage_bytes;
    std::optional<uint64_t> limit_bytes;
    std::optional<MemoryStall> stall;
  };
  struct DiskSample {
    uint64_t time_ns;
    std::string cgroup, device;
    uint64_t bytes, busy_ns;
  };
  static constexpr size_t kMaxDiskSamples = 65536;  // node-wide, not per cgroup
  struct QdiscSample {
    uint64_t time_ns;
    std::string device, kind, handle;
    QdiscDelta delta;
  };
  static constexpr size_t kMaxQdiscSamples = 16384;  // node-wide
  struct PreemptionSample {
    uint64_t time_ns;
    std::string by;
    uint64_t count, wait_ns;
  };
  bool room_for(const std::string& cgroup) const;

  uint64_t keep_ns_;
  size_t max_cgroups_;
  std::map<std::string, std::deque<ThrottleSample>> throttle_;
  std::map<std::string, std::deque<PreemptionSample>> preemptions_;
  std::map<std::string, std::deque<MemorySample>> memory_;
  std::deque<DiskSample> disk_;    // oldest first
  std::deque<QdiscSample> qdisc_;  // oldest first
  uint64_t refused_ = 0;
};

}  // namespace tailcause::core
