// SPDX-License-Identifier: Apache-2.0
#include "core/detect/recipe_request_stage.h"

#include "core/detect/glitch_detector.h"

namespace tailcause::core {

namespace {
constexpr double kRunqueueShare = 0.2;
}  // namespace

StageRecord recipe_request_stage(const RequestRecord& r) {
  StageRecord s;
  s.id = r.id;
  s.cgroup_id = r.cgroup_id;
  s.stage = GlitchDetector::kRequestStage;
  s.kind = stage_kind_value(StageKind::response) + 1;  // no fixed kind: named by `stage`
  s.mark_recipe();
  s.start_ns = r.start_ns;
  s.end_ns = r.end_ns;
  s.component_ns = r.call_component_ns;
  // The calls' own unattributed time stays; the time between calls joins it until placed.
  const uint64_t wall = s.wall_ns();
  const uint64_t in_calls = r.in_calls_ns < wall ? r.in_calls_ns : wall;
  s.component_ns[index_of(Component::unattributed)] += wall - in_calls;
  s.between_calls_ns = wall - in_calls;
  return s;
}

void place_between_calls(StageRecord& stage, const EvidenceHints& hints) {
  if (stage.between_calls_ns == 0) return;
  Component to = Component::unattributed;
  if (hints.throttled_periods && hints.periods && 2 * *hints.throttled_periods >= *hints.periods) {
    to = Component::cpu_throttled;
  } else if (hints.preempting_cgroup && hints.runqueue_share >= kRunqueueShare) {
    to = Component::runqueue;
  }
  if (to == Component::unattributed) return;
  stage.component_ns[index_of(Component::unattributed)] -= stage.between_calls_ns;
  stage.component_ns[index_of(to)] += stage.between_calls_ns;
  stage.between_calls_ns = 0;  // placed: nothing left for later evidence to place
}

}  // namespace tailcause::core
