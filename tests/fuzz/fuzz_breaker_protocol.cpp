// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the breaker socket's line protocol, both sides. Any local process may connect to
// the socket, so every request line is hostile; a parsed request must re-encode and parse back
// to itself, and a decoded token must re-encode to something that decodes to it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "core/detect/breaker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_breaker_request(line);
  if (const auto* request = std::get_if<BreakerRequest>(&parsed)) {
    std::string again = format_breaker_request(*request);
    if (again.empty() || again.back() != '\n') std::abort();
    again.pop_back();
    const auto reparsed = parse_breaker_request(again);
    const auto* second = std::get_if<BreakerRequest>(&reparsed);
    if (!second || !(*second == *request)) std::abort();
  } else {
    const auto& error = std::get<BreakerParseError>(parsed);
    const std::string reply = format_breaker_error(error.kind, error.detail);
    // One line back to the client, whatever it sent.
    if (reply.empty() || reply.find('\n') != reply.size() - 1) std::abort();
  }
  if (auto decoded = breaker_percent_decode(line)) {
    const auto round = breaker_percent_decode(breaker_percent_encode(*decoded));
    if (!round || *round != *decoded) std::abort();
  }
  (void)parse_breaker_state_reply(line);
  (void)parse_breaker_list_line(line);
  (void)parse_cache_state_reply(line);
  (void)parse_breaker_error_reply(line);
  return 0;
}
