// SPDX-License-Identifier: Apache-2.0
// The trace context an agent hands the SDK with request_begin: a bare trace id (32 hex digits)
// or a W3C Trace Context `traceparent` (version-traceid-parentid-flags, e.g.
// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01), so that the request span becomes a
// child of the agent's span instead of a second root. The text comes from the traced process
// through a USDT argument: hostile input, checked here by the letter of the W3C rules. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tailcause::core {

inline constexpr size_t kTraceparentChars = 55;  // version 00: 2 + 1 + 32 + 1 + 16 + 1 + 2

struct TraceParent {
  std::string trace_id;        // 32 lower-case hex digits, not all zero
  std::string parent_span_id;  // 16 lower-case hex digits, not all zero
  uint8_t flags = 0;           // trace-flags; bit 0: the caller sampled (recorded) its span
  bool sampled() const { return flags & 1; }
};

// A traceparent header value per W3C Trace Context level 1: version two lower-case hex digits
// other than "ff"; version 00 is exactly 55 characters; a later version may carry more after a
// '-' following the flags (ignored, as the spec asks); lower-case hex only; all-zero trace or
// parent ids are invalid. nullopt for anything else.
std::optional<TraceParent> parse_traceparent(std::string_view text);

// The SDK's trace argument: a bare trace id (32 hex digits of either case, not all zero: the
// existing SDK contract; no parent) or a traceparent. nullopt when it is neither.
std::optional<TraceParent> parse_trace_context(std::string_view text);

}  // namespace tailcause::core
