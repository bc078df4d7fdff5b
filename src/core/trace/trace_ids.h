// SPDX-License-Identifier: Apache-2.0
// Trace and span ids for requests whose agent passed no trace id: derived from the process, the
// request id and a per-daemon salt, so the stages (which end before their request) and the
// request get the same trace id without keeping state, and exemplars and OTLP spans agree.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>

namespace tailcause::core {

// 32 lower-case hex digits, never all zero.
std::string derive_trace_id(uint32_t pid, uint64_t request_id, uint64_t salt);
// 16 lower-case hex digits, never all zero: the span of `what` (0 for the request itself,
// else a stage's start time and thread) within the trace.
std::string derive_span_id(const std::string& trace_id, uint64_t what, uint32_t tid);

}  // namespace tailcause::core
