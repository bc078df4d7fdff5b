// SPDX-License-Identifier: Apache-2.0
// Decides which stages and requests were glitches: slower than their SLO, or far above their
// own recent P99 (per tenant and stage, once the window has enough samples). Learns each
// (tenant, stage)'s normal component profile from the non-glitch stages and explains each
// glitch with a Verdict. Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/record/stage_record.h"
#include "core/aggregate/streaming_quantile.h"
#include "core/detect/verdict.h"

namespace tailcause::core {

struct GlitchConfig {
  uint64_t request_slo_ns = 800'000'000;
  uint64_t stage_slo_ns = 200'000'000;                    // default for stages not listed below
  std::map<std::string, uint64_t> stage_slo_ns_by_stage;  // stage name -> SLO
  double p99_factor = 2.0;                       // glitch when wall > factor x recent P99 ...
  uint64_t min_samples = 50;                     // ... once the window holds this many samples
  uint64_t recipe_noise_floor_ns = 20'000'000;   // recipe spans below this: SLO rule only
  uint64_t window_interval_ns = 10'000'000'000;  // P99 window: 6 x 10 s
  size_t window_intervals = 6;
  size_t max_series = 4096;  // (tenant, stage) pairs tracked; beyond, SLO checks only
  uint64_t profile_horizon = 1000;
};

enum class GlitchReason : uint8_t { none, over_slo, over_p99, both };
const char* glitch_reason_name(GlitchReason r);

struct GlitchCheck {
  GlitchReason reason = GlitchReason::none;
  uint64_t wall_ns = 0;
  uint64_t slo_ns = 0;
  std::optional<uint64_t> p99_ns;  // the window's P99 before this sample, when trusted
  double p99_factor = 0;           // the P99 rule's limit is p99_factor x p99_ns
  bool glitch() const { return reason != GlitchReason::none; }
  bool over_p99() const { return reason == GlitchReason::over_p99 || reason == GlitchReason::both; }
};

// The threshold(s) a glitch crossed, each with its value: "over_slo 200 ms",
// "over_p99 21.4 ms (2x P99 10.7 ms)", or both joined by ", ".
std::string threshold_text(const GlitchCheck& c);

struct Glitch {
  std::string tenant, agent, stage, trace_id;
  GlitchCheck check;
  Verdict verdict;
  uint32_t pid = 0;
  uint64_t request_id = 0;
  uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
  // The leading culprit's component name, or a detector's cause ("cache_breakdown",
  // "entropy_spike"); "slow" when nothing stands out (a request, or no component data).
  std::string cause;
  // The stage's breakdown (zero for requests and the detectors' glitches).
  std::array<uint64_t, kComponents> component_ns{};
  uint64_t page_cache_misses = 0;
};

class GlitchDetector {
 public:
  static constexpr const char* kRequestStage = "request";

  explicit GlitchDetector(GlitchConfig config = {});

  // Checks the stage against its thresholds, then adds it to the window (and, when normal, to
  // the profile). `now_ns` is the record's end time unless the caller says otherwise.
  std::optional<Glitch> observe(const StageRecord& r, const EvidenceHints& hints = {});
  std::optional<Glitch> observe(const StageRecord& r, uint64_t now_ns, const EvidenceHints& hints);
  // A whole request: same rules with the request SLO, windowed per tenant under stage
  // "request"; no components, so the verdict only carries the duration.
  std::optional<Glitch> observe(const RequestRecord& r);

  uint64_t slo_for(const std::string& stage) const;
  const ComponentProfile* profile(const std::string& tenant, const std::string& stage) const;
  const StreamingQuantile* window(const std::string& tenant, const std::string& stage) const;
  size_t series() const { return series_.size(); }
  uint64_t untracked() const { return untracked_; }  // samples refused for lack of room

 private:
  struct Series {
    StreamingQuantile window;
    ComponentProfile profile;
    // The window's P99, recomputed at most every kP99RefreshNs: a quantile walks the window's
    // buckets (thousands of counters), too much for every record at a million a second, and a
    // 60 s window moves little in 100 ms.
    uint64_t p99_ns = 0;
    uint64_t p99_at_ns = 0;
    bool p99_valid = false;
  };
  static constexpr uint64_t kP99RefreshNs = 100'000'000;
  Series* series_for(const std::string& tenant, const std::string& stage);
  GlitchCheck check(Series* s, uint64_t wall_ns, uint64_t slo_ns, uint64_t now_ns);

  GlitchConfig config_;
  std::map<std::pair<std::string, std::string>, Series> series_;
  uint64_t untracked_ = 0;
};

}  // namespace tailcause::core
