// SPDX-License-Identifier: Apache-2.0
// Which finished requests become OTLP traces: every glitch trace and a fixed share of normal
// ones, under a budget of spans per second (a token bucket). Glitch traces come first: normal
// ones may only spend the part of the bucket above a reserve, so a burst of glitches still
// finds room. The decision covers a whole trace (its request and all its stages), and the
// normal-trace sample is OpenTelemetry's TraceIdRatioBased rule on the trace id, so a trace is
// all in or all out wherever it is decided, and an agent sampling the same ratio with an
// OpenTelemetry SDK keeps the same traces. Pure: no I/O; the caller passes the clock
// (CLOCK_MONOTONIC in the daemon).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

struct SamplerConfig {
  uint32_t budget_spans_per_s = 200;  // bucket refill rate; the bucket holds one second of it
  double sample_normal = 0.01;        // share of normal (non-glitch) traces kept, 0..1
  double glitch_reserve = 0.5;        // share of the bucket only glitch traces may spend
};

enum class SampleResult : uint8_t {
  keep,         // export the trace
  unsampled,    // a normal trace outside the sampled share (by design, not a loss)
  over_budget,  // refused by the budget (a loss, counted)
};

class TraceSampler {
 public:
  explicit TraceSampler(SamplerConfig config = {});

  // Decides for a trace of `spans` spans at `now_ns`; a kept trace spends `spans` tokens.
  // A trace larger than the whole bucket is always over budget. `parent_sampled`: the sampled
  // flag of the agent's traceparent, when it passed one; a normal trace then follows it as
  // OpenTelemetry's ParentBased sampler does (the agent's trace is kept: ours too; it is not:
  // ours would be an orphan) instead of the ratio.
  SampleResult decide(std::string_view trace_id, bool glitch, size_t spans, uint64_t now_ns,
                      std::optional<bool> parent_sampled = std::nullopt);

  // OpenTelemetry's TraceIdRatioBased decision for a 32-hex-digit trace id: its last 8 bytes
  // (hex digits 16..31) read big-endian, shifted right by one, below uint64(share * 2^63). The
  // rule of the Go SDK (sdk/trace/sampling.go), which the Python, Ruby and Erlang SDKs share
  // (theirs: the low 64 bits below round(share * 2^64)); Java compares |signed low 64 bits|,
  // JavaScript XORs 32-bit words, so those keep other traces. An id that is not 32 hex digits
  // (never exported) is never in the sample unless share is 1.
  static bool in_sample(std::string_view trace_id, double share);
  // uint64(share * 2^63): the bound the shifted low 64 bits must stay below.
  static uint64_t ratio_upper_bound(double share);

  double tokens() const { return tokens_; }
  double capacity() const { return capacity_; }
  uint64_t kept_spans() const { return kept_spans_; }
  uint64_t unsampled_spans() const { return unsampled_spans_; }
  uint64_t over_budget_spans() const { return over_budget_spans_; }

 private:
  void refill(uint64_t now_ns);

  SamplerConfig config_;
  double capacity_;
  double tokens_;
  std::optional<uint64_t> last_ns_;  // unset until the first decision (the bucket starts full)
  uint64_t kept_spans_ = 0, unsampled_spans_ = 0, over_budget_spans_ = 0;
};

}  // namespace tailcause::core
