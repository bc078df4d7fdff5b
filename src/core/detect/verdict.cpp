// SPDX-License-Identifier: Apache-2.0
#include "core/detect/verdict.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tailcause::core {

void ComponentProfile::add(const StageRecord& r) {
  uint64_t wall = r.wall_ns();
  if (wall == 0) return;  // no shape to learn from
  if (samples_ < horizon_) samples_++;
  double weight = 1.0 / static_cast<double>(samples_);
  mean_wall_ns_ += (static_cast<double>(wall) - mean_wall_ns_) * weight;
  for (size_t c = 0; c < kComponents; c++) {
    double f = static_cast<double>(r.component_ns[c]) / static_cast<double>(wall);
    fractions_[c] += (f - fractions_[c]) * weight;
  }
}

std::string format_duration(uint64_t ns) {
  double v = static_cast<double>(ns);
  auto three = [](double x, const char* unit) {
    return x < 999.5 ? fmt::format("{:.3g} {}", x, unit) : fmt::format("{:.0f} {}", x, unit);
  };
  if (v >= 999.5e6) return three(v / 1e9, "s");
  if (v >= 999.5e3) return three(v / 1e6, "ms");
  return three(v / 1e3, "us");
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    unit++;
  }
  return fmt::format("{:.3g} {}", bytes, kUnits[unit]);
}

std::string describe_memory_pressure(const std::string& cgroup, const MemoryEvidence& e) {
  std::string s = "memory cgroup " + cgroup;
  if (e.limit_bytes && *e.limit_bytes > 0) {
    const double used = static_cast<double>(e.usage_bytes) / static_cast<double>(*e.limit_bytes);
    s += used >= 0.9 ? " at its " : fmt::format(" at {:.0f}% of its ", used * 100);
    s += format_bytes(static_cast<double>(*e.limit_bytes)) + " limit,";
  }
  s += " reclaiming " + format_bytes(e.reclaim_bytes_per_s()) + "/s";
  if (e.before_stage) s += " just before";
  if (e.stall_some_us > 0 && e.stall_scope != StallScope::none) {
    // Below half a percent a stall is real but would round to a misleading "0%".
    const double pct = e.stall_some_share() * 100;
    const std::string share = pct < 0.5 ? "<1%" : fmt::format("{:.0f}%", pct);
    s += e.stall_scope == StallScope::cgroup
             ? ", tasks stalled on memory " + share + " of the time (PSI)"
             : "; node memory stall " + share + " (PSI)";
  }
  return s;
}

std::string describe_disk_user(const DiskEvidence& e) {
  // "disk vda busy with cgroup /batch's I/O (92% of its request time, 412 MB)"
  const double share =
      e.total_busy_ns ? static_cast<double>(e.busy_ns) / static_cast<double>(e.total_busy_ns) : 0;
  return fmt::format("disk {} busy with cgroup {}'s I/O ({:.0f}% of its request time, {})",
                     e.device, e.cgroup, share * 100, format_bytes(static_cast<double>(e.bytes)));
}

std::string describe_qdisc(const QdiscEvidence& e) {
  std::string s = fmt::format("qdisc {} {} on {}", e.kind, e.handle, e.device);
  if (e.overlimits > 0) {
    s += " over its limit " + format_count(e.overlimits) + (e.overlimits == 1 ? " time" : " times");
  }
  if (e.drops > 0) {
    s += fmt::format("{} {} {}", e.overlimits > 0 ? "," : "", "dropped " + format_count(e.drops),
                     e.drops == 1 ? "packet" : "packets");
  }
  if (e.overlimits == 0 && e.drops == 0) s += " queueing";
  std::string detail;
  if (e.bytes > 0) detail = format_bytes(static_cast<double>(e.bytes)) + " sent";
  if (e.backlog_bytes > 0) {
    detail += (detail.empty() ? "backlog " : ", backlog ") +
              format_bytes(static_cast<double>(e.backlog_bytes));
  }
  return detail.empty() ? s : s + " (" + detail + ")";
}

bool is_loopback_peer(const std::string& peer) {
  if (peer.starts_with("[::1]:")) return true;
  // 127.0.0.0/8: "127." then the rest of a dotted quad and a port.
  return peer.starts_with("127.") && peer.find(':') != std::string::npos &&
         peer.find('[') == std::string::npos;
}

std::string format_count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

// What the caller (or the record itself) knows about why this component was slow.
std::string extra_for(Component c, const StageRecord& r, const EvidenceHints& hints) {
  switch (c) {
    case Component::cpu_throttled: {
      const bool periods_inside = hints.throttled_periods && !hints.throttled_before_stage;
      if (!periods_inside && !r.throttled_waits && !hints.throttled_periods) break;
      std::string s = hints.cgroup ? "cgroup " + *hints.cgroup + " throttled " : "throttled ";
      if (periods_inside || !r.throttled_waits) {
        // "cgroup /agents/t-782 throttled in 41 of 50 periods (quota 0.1 CPU)": cpu.stat read
        // during the stage (or, failing all else, just before it).
        s += "in " + format_count(*hints.throttled_periods);
        if (hints.periods) s += " of " + format_count(*hints.periods);
        s += " periods";
        if (hints.throttled_before_stage) s += " just before";
      } else {
        // A stage between two cpu.stat readings: its run queue's own throttle clock.
        s += format_count(r.throttled_waits) +
             (r.throttled_waits == 1 ? " time in the stage" : " times in the stage");
      }
      if (hints.quota_cpus) s += fmt::format(" (quota {:.3g} CPU)", *hints.quota_cpus);
      return s;
    }
    case Component::runqueue:
      if (hints.preempting_cgroup) return "preempted by " + *hints.preempting_cgroup;
      break;
    case Component::block_io: {
      std::string s;
      if (r.page_cache_misses > 0) s = format_count(r.page_cache_misses) + " page-cache misses";
      if (hints.memory_pressure) s += (s.empty() ? "" : "; ") + *hints.memory_pressure;
      if (hints.disk_user) s += (s.empty() ? "" : "; ") + *hints.disk_user;
      return s;
    }
    case Component::network: {
      std::string s;
      if (hints.peer) {
        s = "peer " + *hints.peer;
      } else if (r.network_peer) {
        s = "peer " + *r.network_peer;  // measured by the kernel
      }
      if (hints.qdisc) s += (s.empty() ? "" : "; ") + *hints.qdisc;
      return s;
    }
    case Component::lock:
      if (hints.lock_name) return "contended " + *hints.lock_name;
      break;
    default: break;
  }
  return {};
}

}  // namespace

Verdict explain(const StageRecord& r, const ComponentProfile* normal, const EvidenceHints& hints,
                const VerdictOptions& options) {
  Verdict v;
  uint64_t wall = r.wall_ns();
  bool history = normal != nullptr && normal->samples() > 0;
  std::vector<Culprit> all;
  double total_excess = 0;
  for (size_t c = 0; c < kComponents; c++) {
    auto comp = static_cast<Component>(c);
    double actual = static_cast<double>(r.component_ns[c]);
    // Expected: the normal stage's time in this component (not a share of this slow stage's
    // wall time, which would hide a component that grew along with the total).
    double expected = history ? normal->fraction(comp) * normal->mean_wall_ns() : 0.0;
    double excess = actual - expected;
    if (excess <= 0 || r.component_ns[c] == 0) continue;
    total_excess += excess;
    all.push_back(
        {comp, r.component_ns[c], wall ? actual / static_cast<double>(wall) : 0.0, excess});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Culprit& a, const Culprit& b) { return a.excess_ns > b.excess_ns; });
  for (const auto& c : all) {
    if (v.culprits.size() >= options.max_culprits) break;
    if (!v.culprits.empty() && c.excess_ns < options.secondary_share * total_excess) break;
    v.culprits.push_back(c);
  }

  v.evidence = fmt::format("{} {}", r.stage, format_duration(wall));
  for (const auto& c : v.culprits) {
    v.evidence +=
        fmt::format(", {:.0f}% {}", std::round(c.share_of_wall * 100), component_name(c.component));
    // Critical path: the cause was another thread's, which this stage waited on.
    if (r.waker && r.waker->component == c.component) {
      const char* who = r.waker->lock_holder ? "lock holder"
                        : r.waker->peer      ? "peer thread"
                                             : "thread";
      v.evidence += fmt::format(" via {} tid {}", who, r.waker->tid);
    }
    std::string extra = extra_for(c.component, r, hints);
    if (!extra.empty()) v.evidence += ": " + extra;
  }
  return v;
}

}  // namespace tailcause::core
