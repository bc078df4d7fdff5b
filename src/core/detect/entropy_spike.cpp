// SPDX-License-Identifier: Apache-2.0
#include "core/detect/entropy_spike.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/detect/verdict.h"

namespace tailcause::core {

namespace {

// The anomaly nearest in time to one of the spike's outputs, within the window.
struct Match {
  const KernelAnomaly* anomaly = nullptr;
  bool same_thread = false;
  int64_t offset_ns = 0;  // anomaly end minus the output's time: < 0 before, > 0 after
};

void consider(Match& best, const KernelAnomaly* a, bool same_thread, uint64_t window_ns,
              const std::vector<uint64_t>& times) {
  if (a == nullptr) return;
  for (uint64_t t : times) {
    const int64_t offset = static_cast<int64_t>(a->end_ns - t);
    const uint64_t distance = offset < 0 ? -static_cast<uint64_t>(offset) : offset;
    if (distance > window_ns) continue;
    const uint64_t best_distance =
        best.offset_ns < 0 ? -static_cast<uint64_t>(best.offset_ns) : best.offset_ns;
    // Thread candidates are considered first, so a tie keeps the thread's.
    if (best.anomaly == nullptr || distance < best_distance) best = {a, same_thread, offset};
  }
}

std::string describe(const Match& m) {
  const std::string where = m.same_thread ? "on the same thread" : "in the same process";
  const uint64_t distance =
      m.offset_ns < 0 ? -static_cast<uint64_t>(m.offset_ns) : static_cast<uint64_t>(m.offset_ns);
  const std::string when = format_duration(distance) + (m.offset_ns <= 0 ? " before" : " after");
  if (m.anomaly->kind == kMajorFaultAnomaly) return fmt::format("major fault {} {}", where, when);
  return fmt::format("{} stall {} {} {}", m.anomaly->kind, format_duration(m.anomaly->duration_ns),
                     where, when);
}

}  // namespace

EntropySpikeDetector::EntropySpikeDetector(const EntropySettings& settings, size_t max_requests)
    : settings_(settings), max_requests_(max_requests ? max_requests : 1) {
  if (!(settings.rise > 0)) throw std::invalid_argument("entropy: rise must be > 0");
  if (settings_.outputs == 0) settings_.outputs = 1;
}

EntropySpikeDetector::Request& EntropySpikeDetector::request_for(const Key& key) {
  auto it = requests_.find(key);
  if (it != requests_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);  // now the most recent
    return it->second;
  }
  if (requests_.size() >= max_requests_) {
    erase(requests_.find(lru_.back()));  // a request whose end we never saw, most likely
    evicted_++;
  }
  lru_.push_front(key);
  Request& q = requests_[key];
  q.lru = lru_.begin();
  return q;
}

void EntropySpikeDetector::erase(std::map<Key, Request>::iterator it) {
  if (it == requests_.end()) return;
  lru_.erase(it->second.lru);
  requests_.erase(it);
}

void EntropySpikeDetector::end_request(uint32_t pid, uint64_t request_id) {
  erase(requests_.find({pid, request_id}));
}

void EntropySpikeDetector::end_process(uint32_t pid) {
  auto it = requests_.lower_bound({pid, 0});
  while (it != requests_.end() && it->first.first == pid) erase(it++);
}

std::optional<Glitch> EntropySpikeDetector::observe(const QualityRecord& r) {
  Request& q = request_for({r.id.pid, r.id.request_id});
  auto add_to_baseline = [&q](double e) {
    q.baseline_sum += e;
    q.baseline_outputs++;
  };
  if (q.baseline_outputs < kMinBaseline) {
    add_to_baseline(r.entropy);
    return std::nullopt;
  }
  const double baseline = q.baseline_sum / static_cast<double>(q.baseline_outputs);
  const bool high = r.entropy >= baseline * (1 + settings_.rise) && r.entropy > baseline;
  if (!high) {
    if (!q.spiking) {
      for (const Output& o : q.run) add_to_baseline(o.entropy);  // a run too short: ordinary
    }
    q.run.clear();
    q.spiking = false;
    add_to_baseline(r.entropy);
    return std::nullopt;
  }
  if (q.spiking) return std::nullopt;  // the same run of high outputs: reported once
  q.run.push_back({r.time_ns, r.entropy, r.thread_anomaly, r.process_anomaly});
  if (q.run.size() < settings_.outputs) return std::nullopt;
  Glitch g = spike_glitch(r, q);
  q.run.clear();
  q.spiking = true;
  spikes_++;
  return g;
}

Glitch EntropySpikeDetector::spike_glitch(const QualityRecord& r, const Request& q) const {
  const double baseline = q.baseline_sum / static_cast<double>(q.baseline_outputs);
  double sum = 0;
  std::vector<uint64_t> times;
  for (const Output& o : q.run) {
    sum += o.entropy;
    times.push_back(o.time_ns);
  }
  const double mean = sum / static_cast<double>(q.run.size());

  const uint64_t window_ns = uint64_t{settings_.correlation_ms} * 1'000'000;
  Match best;
  for (const Output& o : q.run) {
    consider(best, o.thread_anomaly ? &*o.thread_anomaly : nullptr, true, window_ns, times);
  }
  for (const Output& o : q.run) {
    // The process's last anomaly is the thread's own when that thread had the latest one.
    if (o.process_anomaly && o.process_anomaly != o.thread_anomaly) {
      consider(best, &*o.process_anomaly, false, window_ns, times);
    }
  }

  Glitch g;
  g.tenant = r.id.tenant;
  g.agent = r.id.agent;
  g.stage = kStage;
  g.trace_id = r.id.trace_id;
  g.pid = r.id.pid;
  g.request_id = r.id.request_id;
  g.start_ns = q.run.front().time_ns;
  g.end_ns = q.run.back().time_ns;
  g.check.wall_ns = g.end_ns > g.start_ns ? g.end_ns - g.start_ns : 0;
  g.cause = kCause;
  const std::string rise =
      baseline > 0 ? fmt::format("+{}%", std::lround((mean / baseline - 1) * 100)) : "from 0";
  g.verdict.evidence = fmt::format("entropy {:.2f} vs baseline {:.2f} ({}) over {} outputs; ", mean,
                                   baseline, rise, q.run.size());
  if (best.anomaly == nullptr) {
    g.verdict.evidence += fmt::format("no kernel anomaly within {} ms", settings_.correlation_ms);
    return g;
  }
  g.verdict.evidence += describe(best);
  if (auto c = anomaly_component(best.anomaly->kind)) {
    Culprit culprit;
    culprit.component = *c;
    culprit.ns = best.anomaly->duration_ns;
    culprit.excess_ns = static_cast<double>(best.anomaly->duration_ns);
    g.verdict.culprits.push_back(culprit);  // share_of_wall stays 0: a spike has no wall time
  }
  return g;
}

}  // namespace tailcause::core
