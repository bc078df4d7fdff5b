// SPDX-License-Identifier: Apache-2.0
// A request grouped from uprobe recipe calls (core/record/recipe_requests.h) as a stage named
// "request", which the glitch detector judges and the incident detector follows, so that what
// users feel (the whole request, throttled or preempted between the runtime's calls) opens
// verdicts and incidents even when each call is as fast as ever. Its components are its calls'
// (measured) plus the time between calls, which no span measured: placed by the evidence
// around it, in cpu_throttled when its cgroup was throttled in half of the CFS periods or more,
// else in runqueue when its tasks waited to run for a fifth of the window or more, else left
// unattributed. Pure: no I/O.
#pragma once

#include "core/detect/verdict.h"
#include "core/record/stage_record.h"

namespace tailcause::core {

// The request's window and calls, the time between calls not yet placed (unattributed).
StageRecord recipe_request_stage(const RequestRecord& r);
// Moves the time between calls into the component the evidence names; once moved,
// between_calls_ns is 0 (so evidence that comes later can place what none placed yet).
void place_between_calls(StageRecord& stage, const EvidenceHints& hints);

}  // namespace tailcause::core
