// SPDX-License-Identifier: Apache-2.0
// The endpoint families of the JSON API, each a pure function of the history and the validated
// parameters (api.cpp routes to them under its lock). The JSON shapes are documented in the
// README ("Web UI and API").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/aggregate/metric_history.h"
#include "core/aggregate/stage_heatmap.h"
#include "export/api/params.h"

namespace tailcause::exporter::api {

inline constexpr int64_t kSecondNs = 1'000'000'000;
inline constexpr int64_t kMaxSinceS = 24 * 3600;  // asking for more than the ring holds is fine
inline constexpr int64_t kMaxPoints = 450;        // points (time columns) in one reply

// The `since` and `step` parameters (seconds), with their defaults; throws BadRequest when
// since / step exceeds kMaxPoints.
struct SinceStep {
  int64_t since_s, step_s;
};
SinceStep since_and_step(const Params& p, int64_t default_since_s, int64_t default_step_s);

// The ticks in (now - since, now], grouped by `step` seconds: time columns ending at these
// Unix nanosecond times, oldest first. Throws BadRequest when since / step exceeds kMaxPoints.
struct Columns {
  int64_t from_ns = 0, to_ns = 0, step_ns = 0;
  std::vector<int64_t> ends;
  // The column a tick belongs to, or -1 outside.
  int index(int64_t tick_ns) const;
};
Columns columns(const Params& p, int64_t now_ns, int64_t tick_ns, int64_t default_since_s,
                int64_t default_step_s);

// /stages: per tenant and stage P50/P99, count, glitches and components, with points over time.
nlohmann::json stages_json(const core::MetricHistory& h, const Params& p, int64_t now_ns);
// /heatmap/stage: end second x latency bucket counts of one stage. Columns are whole seconds,
// [x - step_s, x) for each end x: the same range /glitches?from=x-step_s&to=x lists.
nlohmann::json stage_heatmap_json(const core::StageHeatmap& h, const Params& p, int64_t now_ns);
// /heatmap/tcp: service pair x hour P99 (metric=rtt|duration).
nlohmann::json tcp_heatmap_json(const core::MetricHistory& h, const Params& p);
// /heatmap/layers: layer x batch size P99 (64 x 64 at most).
nlohmann::json layer_heatmap_json(const core::MetricHistory& h, const Params& p, int64_t now_ns);
// /caches: per tenant and cache hit/miss/stale, breakdown ratio and state, stale-age P95/P99.
nlohmann::json caches_json(const core::MetricHistory& h, const Params& p, int64_t now_ns,
                           double breakdown_ratio);
// /contention: throttled cgroups, noisy neighbours (who preempted whom), breaker states.
nlohmann::json contention_json(const core::MetricHistory& h, const Params& p, int64_t now_ns);

}  // namespace tailcause::exporter::api
