// SPDX-License-Identifier: Apache-2.0
#include "core/trace_sampler.h"

#include <algorithm>

namespace tailcause::core {
namespace {

// FNV-1a, then a SplitMix64 finaliser: agent-supplied ids need not be random in every bit.
uint64_t hash_id(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

TraceSampler::TraceSampler(SamplerConfig config)
    : config_(config),
      capacity_(static_cast<double>(config.budget_spans_per_s)),
      tokens_(capacity_) {
  config_.sample_normal = std::clamp(config_.sample_normal, 0.0, 1.0);
  config_.glitch_reserve = std::clamp(config_.glitch_reserve, 0.0, 1.0);
}

bool TraceSampler::in_sample(std::string_view trace_id, double share) {
  if (share >= 1.0) return true;
  if (share <= 0.0) return false;
  // The top 53 bits as a uniform double in [0, 1).
  const double u = static_cast<double>(hash_id(trace_id) >> 11) * 0x1p-53;
  return u < share;
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
                                  uint64_t now_ns) {
  if (!glitch && !in_sample(trace_id, config_.sample_normal)) {
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
