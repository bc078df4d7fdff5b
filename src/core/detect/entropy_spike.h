// SPDX-License-Identifier: Apache-2.0
// Output-entropy spikes per request, joined to kernel anomalies of the same process. Pure: no I/O.
//
// Per (pid, request): the baseline is the mean entropy of the request's ordinary outputs so far
// (nothing is judged before kMinBaseline of them). An output is high when it is at least
// baseline x (1 + rise) (and above the baseline, so a zero baseline does not make every output
// high). `outputs` consecutive high outputs are a spike: one Glitch on the output that completes
// it, none for the rest of that run. High outputs of a run too short to be a spike are ordinary
// and join the baseline when the run breaks; a spike's outputs never do.
//
// Correlation rule: each quality record carries the last kernel anomaly of its thread and of its
// process (bpf/attrib.h). An anomaly carried by any of the spike's own records correlates when
// its end lies within correlation_ms of any of the spike's output times, before or after (so a
// stall between two spike outputs, stamped on the later record, counts). Anomalies that end after
// the spike's last output are not seen: they arrive with later records, after the Glitch was
// emitted. The nearest one in time is named, the thread's own before its process's on a tie.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/detect/glitch_detector.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

class EntropySpikeDetector {
 public:
  static constexpr size_t kMaxRequests = 4096;  // requests tracked; the least recent is evicted
  static constexpr uint64_t kMinBaseline = 3;   // outputs of baseline before any judgement
  static constexpr const char* kStage = "generation";
  static constexpr const char* kCause = "entropy_spike";

  explicit EntropySpikeDetector(const EntropySettings& settings,
                                size_t max_requests = kMaxRequests);

  std::optional<Glitch> observe(const QualityRecord& r);
  // Frees the request's state (request_end), or every request of an exited process.
  void end_request(uint32_t pid, uint64_t request_id);
  void end_process(uint32_t pid);

  size_t requests() const { return requests_.size(); }
  uint64_t evicted() const { return evicted_; }  // requests dropped for room (LRU)
  uint64_t spikes() const { return spikes_; }

 private:
  using Key = std::pair<uint32_t, uint64_t>;  // pid, request id
  struct Output {
    uint64_t time_ns = 0;
    double entropy = 0;
    std::optional<KernelAnomaly> thread_anomaly, process_anomaly;
  };
  struct Request {
    double baseline_sum = 0;
    uint64_t baseline_outputs = 0;
    std::vector<Output> run;  // the current run of high outputs, until it becomes a spike
    bool spiking = false;     // the current run already was a spike
    std::list<Key>::iterator lru;
  };

  Request& request_for(const Key& key);
  void erase(std::map<Key, Request>::iterator it);
  Glitch spike_glitch(const QualityRecord& r, const Request& q) const;

  EntropySettings settings_;
  size_t max_requests_;
  std::map<Key, Request> requests_;
  std::list<Key> lru_;  // most recently seen first
  uint64_t evicted_ = 0;
  uint64_t spikes_ = 0;
};

}  // namespace tailcause::core
