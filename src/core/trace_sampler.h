// SPDX-License-Identifier: Apache-2.0
// Which finished requests become OTLP traces: every glitch trace and a fixed share of normal
// ones, under a budget of spans per second (a token bucket). Glitch traces come first: normal
// ones may only spend the part of the bucket above a reserve, so a burst of glitches still
// finds room. The decision covers a whole trace (its request and all its stages), and the
// normal-trace sample is a hash of the trace id, so a trace is all in or all out wherever it is
// decided. Pure: no I/O; the caller passes the clock (CLOCK_MONOTONIC in the daemon).
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
  // A trace larger than the whole bucket is always over budget.
  SampleResult decide(std::string_view trace_id, bool glitch, size_t spans, uint64_t now_ns);

  // Whether a normal trace with this id falls in the sampled share: a stable function of the
  // id, uniform over ids.
  static bool in_sample(std::string_view trace_id, double share);

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
