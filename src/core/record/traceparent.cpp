// SPDX-License-Identifier: Apache-2.0
#include "core/record/traceparent.h"

namespace tailcause::core {
namespace {

bool lower_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool all_zero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

int hex_digit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view text) {
  if (text.size() < kTraceparentChars) return std::nullopt;
  const std::string_view version = text.substr(0, 2);
  if (!lower_hex(version) || version == "ff") return std::nullopt;
  if (version == "00" && text.size() != kTraceparentChars) return std::nullopt;
  // A later version: what follows the flags must start with '-' (future fields).
  if (text.size() > kTraceparentChars && text[kTraceparentChars] != '-') return std::nullopt;
  if (text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
  const std::string_view trace = text.substr(3, 32), parent = text.substr(36, 16),
                         flags = text.substr(53, 2);
  if (!lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags)) return std::nullopt;
  if (all_zero(trace) || all_zero(parent)) return std::nullopt;
  TraceParent tp;
  tp.trace_id = std::string(trace);
  tp.parent_span_id = std::string(parent);
  tp.flags = static_cast<uint8_t>(hex_digit(flags[0]) << 4 | hex_digit(flags[1]));
  return tp;
}

std::optional<TraceParent> parse_trace_context(std::string_view text) {
  if (text.size() != 32) return parse_traceparent(text);
  TraceParent tp;
  tp.trace_id = std::string(text);
  for (char& c : tp.trace_id) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!lower_hex(tp.trace_id) || all_zero(tp.trace_id)) return std::nullopt;
  tp.flags = 1;  // a bare id says nothing against sampling
  return tp;
}

}  // namespace tailcause::core
