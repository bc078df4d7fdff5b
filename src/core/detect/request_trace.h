// SPDX-License-Identifier: Apache-2.0
// A finished request as one trace: the request, the stages it ran (on any thread), and the
// glitches found in it, with the clock offset that dates its monotonic times. This is what the
// analyzer hands the trace exporters (OTLP). Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/detect/glitch_detector.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

struct RequestTrace {
  RequestRecord request;
  std::vector<StageRecord> stages;  // in start order; worker spans included
  // Glitches of this request: its stages' (Glitch::stage names the stage) and, with stage
  // "request", the request's own.
  std::vector<Glitch> glitches;
  std::string trace_id;  // 32 hex digits: the agent's, or derived (trace_ids.h)
  bool trace_id_from_agent = false;
  int64_t unix_offset_ns = 0;  // add to a CLOCK_MONOTONIC time to get Unix time

  bool glitch() const { return !glitches.empty(); }
  // The glitch found for stage `index` of `stages`, if any.
  const Glitch* stage_glitch(size_t index) const;
  size_t span_count() const { return 1 + stages.size(); }
};

}  // namespace tailcause::core
