// SPDX-License-Identifier: Apache-2.0
// Sends finished requests as OTLP/HTTP traces (protobuf) to otlp.endpoint without ever holding
// up the caller: submit() samples the trace (core::TraceSampler: glitches first, a share of
// normal ones, a span budget) and queues it; a worker thread batches (batch_spans, or whatever
// has waited flush_interval), POSTs, and retries connection errors, 429, 502, 503 and 504 with
// exponential backoff and jitter, honouring Retry-After. Other 4xx/5xx answers drop the batch.
// The queue is bounded (queue_spans): beyond it, and for everything else that is not sent, spans
// are dropped and counted by reason, so memory stays flat while the collector is down.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/config/config.h"
#include "core/record/metrics.h"
#include "core/detect/request_trace.h"
#include "core/trace/trace_sampler.h"
#include "export/otlp_encode.h"

namespace httplib {
class ClientImpl;
}

namespace tailcause::exporter {

struct OtlpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Batching and retry timing: fixed in the daemon, shortened by tests.
struct OtlpTuning {
  std::chrono::milliseconds flush_interval{1000};   // a partial batch waits at most this long
  std::chrono::milliseconds initial_backoff{1000};  // first wait before a retry ...
  std::chrono::milliseconds max_backoff{30000};     // ... doubling up to this
  double jitter = 0.2;        // each wait is scaled by a random factor in [1-j, 1+j]
  uint32_t max_attempts = 6;  // per batch, the first one included
  std::chrono::milliseconds max_retry_after{60000};  // a collector's Retry-After is capped here
  std::chrono::milliseconds shutdown_grace{2000};    // stop() keeps sending for this long
};

// Why spans were not exported (the `reason` label).
enum class DropReason : uint8_t {
  queue_full,
  budget,
  rejected,
  shutdown,
  retries_exhausted,
  invalid,
  count_
};

class OtlpExporter {
 public:
  // Throws OtlpError when the endpoint is empty or malformed, or https without TLS support.
  explicit OtlpExporter(const core::OtlpSettings& settings, OtlpTuning tuning = {});
  ~OtlpExporter();  // stop()
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Samples and queues the trace; never waits for the network. After stop(): dropped.
  void submit(core::RequestTrace trace);
  // Sends what is queued for at most shutdown_grace (plus a connect already under way), then
  // drops the rest (reason shutdown) and joins the worker. Idempotent.
  void stop();

  // tailcause_otlp_spans_exported_total, _spans_dropped_total{reason},
  // _spans_unsampled_total, _export_errors_total{kind}, _queue_spans, _export_seconds.
  void collect(core::MetricSet& out) const;

  struct Stats {
    uint64_t exported = 0, unsampled = 0;
    std::map<std::string, uint64_t> dropped;  // reason -> spans (every reason present)
    std::map<std::string, uint64_t> errors;   // kind -> failed attempts
    size_t queued_spans = 0, in_flight_spans = 0;
    uint64_t requests = 0;  // POST attempts
  };
  Stats stats() const;

 private:
  struct Entry {
    core::RequestTrace trace;
    size_t spans = 0;
    std::chrono::steady_clock::time_point queued_at;
  };
  void run();
  void send(const std::vector<core::RequestTrace>& batch, size_t spans);
  // Sets the client's timeouts for one attempt: `timeout`, or what is left before stop()'s
  // deadline. False, the batch dropped, when nothing is left.
  bool limit_attempt(std::chrono::milliseconds timeout, size_t spans);
  // Logs a failed attempt (at most every 30 s). False, the batch dropped, when it is not tried
  // again: a final answer, or the last attempt.
  bool retry_failed(const std::string& failure, bool retryable, size_t spans, uint32_t attempt);
  // Waits `delay` before a retry; false when stop()'s deadline comes first.
  bool wait_to_retry(std::chrono::steady_clock::duration delay);
  void drop(DropReason r, uint64_t spans);  // caller holds mu_
  void observe_attempt(double seconds, const std::string& error_kind);

  core::OtlpSettings settings_;
  core::OtlpEndpoint endpoint_;
  OtlpTuning tuning_;
  OtlpResourceInfo resource_;
  std::unique_ptr<httplib::ClientImpl> client_;  // the worker's; stop() may cut it short

  mutable std::mutex mu_;
  std::condition_variable wake_;  // the worker: a full batch, or stop()
  std::condition_variable done_;  // stop(): the worker has finished
  std::deque<Entry> queue_;
  size_t queue_spans_ = 0, in_flight_spans_ = 0;
  bool stopping_ = false, worker_done_ = false, joined_ = false;
  std::chrono::steady_clock::time_point stop_deadline_;
  core::TraceSampler sampler_;
  uint64_t exported_ = 0, requests_ = 0;
  uint64_t dropped_[static_cast<size_t>(DropReason::count_)] = {};
  std::map<std::string, uint64_t> errors_;
  std::vector<uint64_t> seconds_buckets_;  // per bucket of kSecondsBounds, +Inf last
  double seconds_sum_ = 0;
  std::chrono::steady_clock::time_point last_error_log_{};
  std::thread worker_;
};

// The delay a Retry-After header asks for: delta-seconds or an HTTP date; nullopt when unreadable.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

}  // namespace tailcause::exporter
