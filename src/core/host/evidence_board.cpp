// SPDX-License-Identifier: Apache-2.0
#include "core/host/evidence_board.h"

#include <algorithm>

namespace tailcause::core {

EvidenceBoard::EvidenceBoard(uint64_t keep_ns, size_t max_cgroups)
    : keep_ns_(keep_ns), max_cgroups_(max_cgroups) {}

bool EvidenceBoard::room_for(const std::string& cgroup) const {
  return throttle_.count(cgroup) || preemptions_.count(cgroup) || memory_.count(cgroup) ||
         cgroups() < max_cgroups_;
}

void EvidenceBoard::add_throttle_sample(const std::string& cgroup, uint64_t now_ns,
                                        uint64_t nr_periods, uint64_t nr_throttled,
                                        std::optional<double> quota_cpus) {
  if (!room_for(cgroup)) {
    refused_++;
    return;
  }
  throttle_[cgroup].push_back({now_ns, nr_periods, nr_throttled, quota_cpus});
}

namespace {

// The samples bracketing [start, end]: the last one at or before start (else the first) and the
// first one at or after end (else the newest). A stage that no reading falls inside (readings
// come once a second) gets the interval read just before it began: the closest evidence there
// is, flagged `before`. Empty `from == to` when there are not two samples to compare.
template <typename Sample>
struct Bracket {
  const Sample* from = nullptr;
  const Sample* to = nullptr;
  bool before = false;
};

template <typename Sample>
Bracket<Sample> bracket(const std::deque<Sample>& s, uint64_t start_ns, uint64_t end_ns) {
  if (s.size() < 2) return {};
  auto after_start = std::upper_bound(s.begin(), s.end(), start_ns,
                                      [](uint64_t t, const Sample& x) { return t < x.time_ns; });
  auto from = after_start == s.begin() ? s.begin() : std::prev(after_start);
  auto to = std::lower_bound(s.begin(), s.end(), end_ns,
                             [](const Sample& x, uint64_t t) { return x.time_ns < t; });
  if (to == s.end()) to = std::prev(s.end());
  bool before = false;
  if (to <= from) {
    if (from == s.begin()) return {};
    to = from;
    from = std::prev(from);
    before = true;
  }
  return {&*from, &*to, before};
}

uint64_t delta(uint64_t to, uint64_t from) { return to >= from ? to - from : 0; }

}  // namespace

std::optional<ThrottleEvidence> EvidenceBoard::throttle_between(const std::string& cgroup,
                                                                uint64_t start_ns,
                                                                uint64_t end_ns) const {
  auto it = throttle_.find(cgroup);
  if (it == throttle_.end()) return std::nullopt;
  const auto b = bracket(it->second, start_ns, end_ns);
  if (!b.from) return std::nullopt;
  ThrottleEvidence e;
  e.periods = delta(b.to->periods, b.from->periods);
  e.throttled = delta(b.to->throttled, b.from->throttled);
  e.quota_cpus = b.to->quota_cpus;
  e.before_stage = b.before;
  return e;
}

void EvidenceBoard::add_memory_sample(const std::string& cgroup, uint64_t now_ns,
                                      uint64_t reclaimed_bytes, uint64_t reclaim_ns,
                                      uint64_t usage_bytes, std::optional<uint64_t> limit_bytes,
                                      std::optional<MemoryStall> stall) {
  if (!room_for(cgroup)) {
    refused_++;
    return;
  }
  if (stall && stall->scope == StallScope::none) stall.reset();
  memory_[cgroup].push_back({now_ns, reclaimed_bytes, reclaim_ns, usage_bytes, limit_bytes, stall});
}

std::optional<MemoryEvidence> EvidenceBoard::memory_between(const std::string& cgroup,
                                                            uint64_t start_ns,
                                                            uint64_t end_ns) const {
  auto it = memory_.find(cgroup);
  if (it == memory_.end()) return std::nullopt;
  const auto b = bracket(it->second, start_ns, end_ns);
  if (!b.from) return std::nullopt;
  MemoryEvidence e;
  e.reclaimed_bytes = delta(b.to->reclaimed_bytes, b.from->reclaimed_bytes);
  if (e.reclaimed_bytes == 0) return std::nullopt;
  e.reclaim_ns = delta(b.to->reclaim_ns, b.from->reclaim_ns);
  e.seconds = static_cast<double>(b.to->time_ns - b.from->time_ns) * 1e-9;
  e.usage_bytes = b.to->usage_bytes;
  e.limit_bytes = b.to->limit_bytes;
  e.before_stage = b.before;
  // A stall only between two readings of the same file: the cgroup's own and the node's count
  // different tasks, so a cgroup that gained or lost its pressure file has no delta there.
  if (b.from->stall && b.to->stall && b.from->stall->scope == b.to->stall->scope) {
    e.stall_some_us = delta(b.to->stall->some_us, b.from->stall->some_us);
    e.stall_full_us = delta(b.to->stall->full_us, b.from->stall->full_us);
    e.stall_scope = b.to->stall->scope;
  }
  return e;
}

void EvidenceBoard::add_preemptions(const std::string& victim, const std::string& by,
                                    uint64_t now_ns, uint64_t count, uint64_t wait_ns) {
  if (count == 0 && wait_ns == 0) return;
  if (!room_for(victim)) {
    refused_++;
    return;
  }
  preemptions_[victim].push_back({now_ns, by, count, wait_ns});
}

std::optional<PreemptionEvidence> EvidenceBoard::top_preemptor(const std::string& victim,
                                                               uint64_t start_ns, uint64_t end_ns,
                                                               uint64_t slack_ns) const {
  auto it = preemptions_.find(victim);
  if (it == preemptions_.end()) return std::nullopt;
  const uint64_t from = start_ns > slack_ns ? start_ns - slack_ns : 0;
  const uint64_t to = end_ns + slack_ns;
  std::map<std::string, PreemptionEvidence> by;
  PreemptionEvidence all;
  for (const auto& p : it->second) {
    if (p.time_ns < from || p.time_ns > to) continue;
    PreemptionEvidence& e = by[p.by];
    e.preemptions += p.count;
    e.wait_ns += p.wait_ns;
    all.preemptions += p.count;
    all.wait_ns += p.wait_ns;
  }
  if (by.empty()) return std::nullopt;
  auto top = std::max_element(by.begin(), by.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second.wait_ns, a.second.preemptions) <
           std::pair(b.second.wait_ns, b.second.preemptions);
  });
  PreemptionEvidence e = top->second;
  e.by_cgroup = top->first;
  e.total = all.preemptions;
  e.total_wait_ns = all.wait_ns;
  return e;
}

void EvidenceBoard::add_disk_io(const std::string& cgroup, const std::string& device,
                                uint64_t now_ns, uint64_t bytes, uint64_t busy_ns) {
  if (busy_ns == 0 && bytes == 0) return;
  if (disk_.size() >= kMaxDiskSamples) {
    refused_++;
    return;
  }
  disk_.push_back({now_ns, cgroup, device, bytes, busy_ns});
}

std::optional<DiskEvidence> EvidenceBoard::top_disk_user(const std::string& victim,
                                                         uint64_t start_ns, uint64_t end_ns,
                                                         uint64_t slack_ns) const {
  const uint64_t from = start_ns > slack_ns ? start_ns - slack_ns : 0;
  const uint64_t to = end_ns + slack_ns;
  struct Use {
    uint64_t busy_ns = 0, bytes = 0;
    std::map<std::string, uint64_t> by_device;
  };
  std::map<std::string, Use> by;
  uint64_t total = 0;
  // Samples are in time order: start where the interval does.
  auto it = std::lower_bound(disk_.begin(), disk_.end(), from,
                             [](const DiskSample& d, uint64_t t) { return d.time_ns < t; });
  for (; it != disk_.end() && it->time_ns <= to; ++it) {
    total += it->busy_ns;
    if (it->cgroup == victim) continue;
    Use& u = by[it->cgroup];
    u.busy_ns += it->busy_ns;
    u.bytes += it->bytes;
    u.by_device[it->device] += it->busy_ns;
  }
  if (by.empty()) return std::nullopt;
  const auto top = std::max_element(by.begin(), by.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second.busy_ns, a.second.bytes) <
           std::pair(b.second.busy_ns, b.second.bytes);
  });
  DiskEvidence e;
  e.cgroup = top->first;
  e.busy_ns = top->second.busy_ns;
  e.bytes = top->second.bytes;
  e.total_busy_ns = total;
  e.device = std::max_element(top->second.by_device.begin(), top->second.by_device.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; })
                 ->first;
  return e;
}

void EvidenceBoard::add_qdisc(const std::string& device, const std::string& kind,
                              const std::string& handle, uint64_t now_ns, const QdiscDelta& delta) {
  if (!delta.acted()) return;
  if (qdisc_.size() >= kMaxQdiscSamples) {
    refused_++;
    return;
  }
  qdisc_.push_back({now_ns, device, kind, handle, delta});
}

std::optional<QdiscEvidence> EvidenceBoard::qdisc_over_limit(
    const std::vector<std::string>& devices, const std::vector<std::string>& except,
    uint64_t start_ns, uint64_t end_ns, uint64_t slack_ns) const {
  const auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const uint64_t from = start_ns > slack_ns ? start_ns - slack_ns : 0;
  const uint64_t to = end_ns + slack_ns;
  std::map<std::pair<std::string, std::string>, QdiscEvidence> by;  // (device, handle)
  auto it = std::lower_bound(qdisc_.begin(), qdisc_.end(), from,
                             [](const QdiscSample& q, uint64_t t) { return q.time_ns < t; });
  for (; it != qdisc_.end() && it->time_ns <= to; ++it) {
    if (devices.empty() ? listed(except, it->device) : !listed(devices, it->device)) continue;
    QdiscEvidence& e = by[{it->device, it->handle}];
    e.device = it->device;
    e.handle = it->handle;
    e.kind = it->kind;
    e.overlimits += it->delta.overlimits;
    e.drops += it->delta.drops;
    e.bytes += it->delta.bytes;
    e.packets += it->delta.packets;
    e.backlog_bytes = std::max(e.backlog_bytes, it->delta.backlog_bytes);
    e.intervals++;
  }
  if (by.empty()) return std::nullopt;
  return std::max_element(by.begin(), by.end(),
                          [](const auto& a, const auto& b) {
                            const QdiscEvidence &x = a.second, &y = b.second;
                            return std::pair(x.overlimits + x.drops, x.backlog_bytes) <
                                   std::pair(y.overlimits + y.drops, y.backlog_bytes);
                          })
      ->second;
}

void EvidenceBoard::expire(uint64_t now_ns) {
  const uint64_t cutoff = now_ns > keep_ns_ ? now_ns - keep_ns_ : 0;
  auto trim = [cutoff](auto& by_cgroup) {
    for (auto it = by_cgroup.begin(); it != by_cgroup.end();) {
      auto& q = it->second;
      // Keep one sample older than the cutoff for throttle deltas that start before it.
      while (q.size() > 1 && q[1].time_ns < cutoff) q.pop_front();
      if (!q.empty() && q.front().time_ns < cutoff && q.size() == 1) q.pop_front();
      it = q.empty() ? by_cgroup.erase(it) : std::next(it);
    }
  };
  trim(throttle_);
  trim(preemptions_);
  trim(memory_);
  while (!disk_.empty() && disk_.front().time_ns < cutoff) disk_.pop_front();
  while (!qdisc_.empty() && qdisc_.front().time_ns < cutoff) qdisc_.pop_front();
}

size_t EvidenceBoard::cgroups() const {
  size_t n = throttle_.size();
  for (const auto& [name, _] : preemptions_) n += throttle_.count(name) ? 0 : 1;
  for (const auto& [name, _] : memory_) {
    n += throttle_.count(name) || preemptions_.count(name) ? 0 : 1;
  }
  return n;
}

}  // namespace tailcause::core
