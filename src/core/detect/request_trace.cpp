// SPDX-License-Identifier: Apache-2.0
#include "core/detect/request_trace.h"

namespace tailcause::core {

const Glitch* RequestTrace::stage_glitch(size_t index) const {
  if (index >= stages.size()) return nullptr;
  const StageRecord& s = stages[index];
  for (const Glitch& g : glitches) {
    // A stage glitch carries the stage's own name and wall time (glitch_detector.cpp).
    if (g.stage == s.stage && g.check.wall_ns == s.wall_ns() && g.start_ns == s.start_ns) {
      return &g;
    }
  }
  return nullptr;
}

}  // namespace tailcause::core
