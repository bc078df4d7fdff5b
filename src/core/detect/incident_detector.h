// SPDX-License-Identifier: Apache-2.0
// Sustained slowdowns as incidents. Each (tenant, stage) learns its normal latency over a long
// horizon (DecayingQuantile, fed with a delay of `window` samples); a change-point test — the
// median of the last `window` stages at `factor` times the baseline median or more — marks a
// shift (entered a little under `factor`, left once 3/4 of the window are back under
// sqrt(factor) or 4/5 under `factor`), which freezes the baseline and opens an incident for the
// tenant (or joins the one already open); a young baseline judges gross shifts only. The incident
// runs from the first slowed stage of the shift (dated back past the window by CUSUM) until the
// last slowed stage before every shifted stage of the tenant recovered and stayed so for
// `quiet_ns`; only then does the baseline learn again. So a fault is one incident with a start, an
// end, the stages it slowed and its cause — the component that grew most over the stages' normal
// mix — not hundreds of glitch rows, and a fault that lasts cannot lift its own threshold. Pure: no
// I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/aggregate/label_budget.h"
#include "core/aggregate/latency_baseline.h"
#include "core/record/metrics.h"
#include "core/record/schema.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

struct IncidentConfig {
  bool enabled = true;
  double factor = 2.0;         // a shift: the window's median at this many x the baseline median
  uint64_t min_samples = 200;  // baseline samples before a (tenant, stage) is judged (warm-up)
  uint64_t horizon = 5000;     // baseline memory in samples (a sample's weight: 1/e after this)
  // A stage counts as slowed only when it also ran this much longer than the baseline median:
  // a 0.4 ms stage doubled by one scheduler hiccup is not a slowdown anyone acts on.
  uint64_t min_excess_ns = 1'000'000;
  size_t window = 15;                 // recent stages whose median is tested
  uint64_t quiet_ns = 5'000'000'000;  // an incident ends this long after its stages recovered
  size_t max_series = 4096;           // (tenant, stage) pairs judged; beyond, none
  size_t max_history = 256;           // ended incidents kept for summaries
  size_t top_k = 50;                  // label values per label in the metrics
  bool operator==(const IncidentConfig&) const = default;
};

// The detector's settings from the configuration (glitch.incident, top_k).
IncidentConfig incident_config(const Config& config);

// One stage an incident slowed.
struct IncidentStage {
  std::string stage;
  uint64_t baseline_ns = 0;  // its baseline median, frozen when the shift began
  uint64_t slowed = 0;       // its stages at factor x baseline or more during the incident
  double peak_ratio = 0;     // slowest of them over the baseline median
  std::array<double, kComponents> excess_ns{};  // growth per component over its normal mix
};

struct Incident {
  uint64_t id = 0;  // 1, 2, ... per detector
  std::string tenant;
  bool active = true;
  // CLOCK_MONOTONIC: the first slowed stage's start, the last slowed stage's end (so far).
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<IncidentStage> stages;  // in the order they shifted
  uint64_t slowed = 0;                // slowed stages, all stages together
  double peak_ratio = 0;              // over their own stage's baseline median
  double median_ratio = 0;            // the slowed stages' median ratio
  // The component whose time grew most over the leading stage's normal mix (summed over its
  // slowed stages: other stages of the tenant may shift meanwhile for another reason, other
  // processes' CPU load say), and its share of that stage's growth; "slow" when nothing grew
  // (no component data).
  std::string cause = "slow";
  double cause_share = 0;
  std::array<double, kComponents> excess_ns{};  // growth per component, all stages together
  // The labels tailcause_incidents_total counted it under when it opened.
  std::string first_stage, first_cause;

  const IncidentStage& leading() const;  // the stage with the most slowed stages
  // "retrieval 4.8x its 3.1 ms baseline (peak 12x), 84 stages slowed, cause block_io 91%"
  std::string describe() const;
};

// A (tenant, stage)'s learned baseline, kept across restarts (the journal's baselines).
struct SavedBaseline {
  std::string tenant, stage;
  DecayingQuantile::State latency;
  std::array<double, kComponents> mix{};  // mean component time of the learned stages
};

class IncidentDetector {
 public:
  explicit IncidentDetector(IncidentConfig config = {});

  // A finished stage; worker spans and aborted stages are not stages of their own.
  void observe(const StageRecord& r);
  // Ends incidents whose quiet period has passed (also done as records arrive).
  void tick(uint64_t now_ns);
  // Ends every active incident now (reconfiguration, shutdown).
  void end_all(uint64_t now_ns);

  // Incidents opened, grown or ended since the last call, as they stand now.
  std::vector<Incident> drain_changed();
  // Active incidents (oldest first), then the ended ones kept, newest first.
  std::vector<Incident> incidents() const;
  size_t active_count() const { return active_.size(); }
  uint64_t opened() const { return next_id_ - 1; }

  // tailcause_incidents_total{tenant,stage,cause}, tailcause_incidents_active{tenant}.
  void collect(MetricSet& out) const;

  // The baselines worth keeping (those that judge: kYoungSamples learned or more), and the
  // restore of those at start: a series the detector already has is left as it is. Returns
  // how many were taken.
  std::vector<SavedBaseline> saved_baselines() const;
  size_t restore_baselines(const std::vector<SavedBaseline>& saved);

  // For tests and reports: a series' baseline and whether it is shifted now.
  const DecayingQuantile* baseline(const std::string& tenant, const std::string& stage) const;
  bool shifted(const std::string& tenant, const std::string& stage) const;
  uint64_t untracked() const { return untracked_; }
  const IncidentConfig& config() const { return config_; }

 private:
  struct Sample {
    uint64_t start_ns = 0, end_ns = 0, wall_ns = 0;
    double ratio = 0;  // wall over the baseline median when it arrived; 0 during warm-up
    // What the test judges: wall over max(median, min_excess / (factor - 1)), so that a
    // slowed stage is both factor x the median and min_excess over it.
    double test_ratio = 0;
    bool counted = false;  // already part of an incident
    std::array<uint64_t, kComponents> component_ns{};
  };
  // A stage that has left the window: enough to date a shift's start (16 bytes, not a Sample).
  struct Past {
    uint64_t start_ns = 0;
    bool slowed = false;
    bool counted = false;  // already part of an incident
  };
  struct Series {
    explicit Series(uint64_t horizon) : baseline(horizon) {}
    DecayingQuantile baseline;
    std::array<double, kComponents> mix{};  // mean component time of the learned stages
    uint64_t median_ns = 0;                 // baseline.median(), refreshed as it learns
    std::deque<Sample> recent;              // the last `window` stages, not yet learned
    std::deque<Past> past;                  // the kPastWindows x `window` stages before those
    bool shifted = false;
  };
  static constexpr size_t kPastWindows = 4;
  struct Active {
    Incident incident;
    DecayingQuantile ratios{0};  // slowed stages' ratios x kRatioScale
    uint32_t shifted_series = 0;
    uint64_t quiet_since_ns = 0;
    std::string tenant_label;  // folded, for the active gauge
  };
  static constexpr double kRatioScale = 1e6;

  void learn(Series& s, const Sample& sample);
  void begin_shift(Series& s, const std::string& tenant, const std::string& stage);
  // The change-point test on a full window: a shift begins, grows its incident, or ends.
  void test_shift(Series& s, const std::string& tenant, const std::string& stage, bool young,
                  uint64_t end_ns);
  void backdate(Active& a, Series& s, const std::string& stage);
  void count_slowed(Active& a, Series& s, const std::string& stage, Sample& sample);
  void update_cause(Incident& inc) const;
  void maybe_end(const std::string& tenant, uint64_t now_ns);
  void end(std::map<std::string, Active>::iterator it);
  double window_quantile(const Series& s, double q) const;  // of the window's test ratios

  IncidentConfig config_;
  // The test enters at factor^0.8 (1.74x for 2x): a 15-stage median of a true 2x shift
  // scatters around 2x, and the baseline median is known to a bucket (9%). It leaves under
  // sqrt(factor), so a shift hovering near its threshold does not flap.
  static constexpr double kEnterExponent = 0.8;
  // A baseline younger than min_samples (a daemon started a minute ago) still judges a gross
  // shift, a median at kGrossFactor x its own, once it has learned kYoungSamples: the median of
  // 30 stages is not known to 9%, but a fault that slows a stage 5x or more is not noise.
  static constexpr uint64_t kYoungSamples = 30;
  static constexpr double kGrossFactor = 5.0;
  double enter_factor_;
  double exit_factor_;
  std::map<std::pair<std::string, std::string>, Series> series_;
  std::map<std::string, Active> active_;  // by tenant: at most one each
  std::deque<Incident> history_;          // ended, newest last
  std::set<uint64_t> dirty_;
  uint64_t next_id_ = 1;
  uint64_t untracked_ = 0;
  LabelBudget tenants_, stages_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;  // folded
  std::set<std::string> gauge_tenants_;  // folded tenants that ever had an incident
};

}  // namespace tailcause::core
