// SPDX-License-Identifier: Apache-2.0
#include "core/trace/trace_sampler.h"

#include <algorithm>
#include <optional>

namespace tailcause::core {
namespace {

// The trace id's last 8 bytes (hex digits 16..31), big-endian.
std::optional<uint64_t> low_64_bits(std::string_view trace_id) {
  if (trace_id.size() != 32) return std::nullopt;
  uint64_t v = 0;
  for (char c : trace_id.substr(16)) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

TraceSampler::TraceSampler(SamplerConfig config)
    : config_(config),
      capacity_(static_cast<double>(config.budget_spans_per_s)),
      tokens_(capacity_) {
  config_.sample_normal = std::clamp(config_.sample_normal, 0.0, 1.0);
  config_.glitch_reserve = std::clamp(config_.glitch_reserve, 0.0, 1.0);
}

uint64_t TraceSampler::ratio_upper_bound(double share) {
  if (!(share > 0.0)) return 0;
  if (share >= 1.0) return uint64_t{1} << 63;
  return static_cast<uint64_t>(share * 0x1p63);  // truncated, as Go's uint64(float64)
}

bool TraceSampler::in_sample(std::string_view trace_id, double share) {
  if (share >= 1.0) return true;
  const auto low = low_64_bits(trace_id);
  return low && (*low >> 1) < ratio_upper_bound(share);
}

void TraceSampler::refill(uint64_t now_ns) {
  if (last_ns_ && now_ns > *last_ns_) {
    const double elapsed_s = static_cast<double>(now_ns - *last_ns_) * 1e-9;
    tokens_ = std::min(capacity_, tokens_ + elapsed_s * config_.budget_spans_per_s);
  }
  // A clock that went backwards (a caller mixing clocks) refills nothing rather than a lot.
  if (!last_ns_ || now_ns > *last_ns_) last_ns_ = now_ns;
}

SampleResult TraceSampler::decide(std::string_view trace_id, bool glitch, size_t spans,
                                  uint64_t now_ns, std::optional<bool> parent_sampled) {
  const bool sampled =
      parent_sampled ? *parent_sampled : in_sample(trace_id, config_.sample_normal);
  if (!glitch && !sampled) {
    unsampled_spans_ += spans;
    return SampleResult::unsampled;
  }
  refill(now_ns);
  const double need = static_cast<double>(spans);
  const double floor = glitch ? 0.0 : config_.glitch_reserve * capacity_;
  if (tokens_ - need < floor) {
    over_budget_spans_ += spans;
    return SampleResult::over_budget;
  }
  tokens_ -= need;
  kept_spans_ += spans;
  return SampleResult::keep;
}

}  // namespace tailcause::core
