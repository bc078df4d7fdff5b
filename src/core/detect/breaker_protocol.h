// SPDX-License-Identifier: Apache-2.0
// The circuit-breaker socket's line protocol, both sides. Pure: no I/O.
//
// One request per line, at most kBreakerMaxLine bytes including the "\n" (a "\r" before it is
// tolerated); fields are separated by spaces:
//   state TENANT AGENT  ->  ok closed|open consecutive=N retry_after_ms=M
//   list                ->  open TENANT AGENT retry_after_ms=M   (one line per open breaker)
//                           end
//   ping                ->  ok pong
//   cache TENANT CACHE  ->  ok healthy|breakdown competition_permille=C miss_permille=R lookups=N
//                           (the daemon's cache breakdown verdict and competition index for
//                           the tenant's vector cache, over its window:
//                           core/detect/cache_breakdown.h; a pair never seen is "healthy" with N =
//                           0)
// Anything else        ->  error KIND DETAIL   (KIND: breaker_error_name())
// M is how long until an open breaker may close (rounded up, so an open breaker never says 0;
// a further slow stage extends it); 0 when closed. TENANT and AGENT are percent-encoded: space,
// "%", control bytes and bytes that are not UTF-8 must be written %XX; an empty one is "%".
// Every other byte may be written either way. A request line must itself be UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/detect/cache_breakdown.h"
#include "core/detect/circuit_breaker.h"

namespace tailcause::core {

inline constexpr size_t kBreakerMaxLine = 512;

enum class BreakerCommand : uint8_t { state, list, ping, cache };

struct BreakerRequest {
  BreakerCommand command = BreakerCommand::ping;
  std::string tenant, agent;  // decoded; state only (cache: tenant)
  std::string cache;          // decoded; cache only
  bool operator==(const BreakerRequest&) const = default;
};

// Why a request got "error": the reply's KIND and the socket's metric label.
enum class BreakerError : uint8_t {
  unknown_command,  // not state/list/ping, or an empty line
  arity,            // wrong number of fields for the command
  encoding,         // bad percent-encoding, or a raw control byte
  too_long,         // a line of kBreakerMaxLine bytes or more without "\n"
  not_utf8,         // the line is not UTF-8
  incomplete,       // the client closed in the middle of a line
  busy,             // the socket serves its maximum of clients already
  internal,         // the daemon failed to answer
};
inline constexpr size_t kBreakerErrorKinds = 8;
const char* breaker_error_name(BreakerError kind);

struct BreakerParseError {
  BreakerError kind = BreakerError::unknown_command;
  std::string detail;  // printable ASCII, no newline; may be empty
};

// ---- server side ----

// `line` is one request without its "\n".
std::variant<BreakerRequest, BreakerParseError> parse_breaker_request(std::string_view line);

std::string format_breaker_state(BreakerState state, uint32_t consecutive, uint64_t retry_after_ms);
// One "open" line per view (closed ones are skipped), then "end".
std::string format_breaker_list(const std::vector<BreakerView>& open);
std::string format_breaker_pong();
std::string format_cache_state(const CacheBreakdownStatus& status);
std::string format_breaker_error(BreakerError kind, std::string_view detail = {});
// The reply to `request` from `breaker` (and `caches` for the cache command; without it every
// pair is unseen) at `now_ns`.
std::string answer_breaker_request(const CircuitBreaker& breaker, const BreakerRequest& request,
                                   uint64_t now_ns, const CacheBreakdownDetector* caches = nullptr);
// Nanoseconds to the protocol's milliseconds, rounded up.
uint64_t breaker_retry_ms(uint64_t retry_after_ns);

// ---- both sides ----

std::string breaker_percent_encode(std::string_view raw);
// nullopt: a "%" not followed by two hex digits (a lone "%" is the empty string).
std::optional<std::string> breaker_percent_decode(std::string_view token);

// ---- client side ----

std::string format_breaker_request(const BreakerRequest& request);  // ends in "\n"

struct BreakerStateReply {
  BreakerState state = BreakerState::closed;
  uint32_t consecutive = 0;
  uint64_t retry_after_ms = 0;
  bool operator==(const BreakerStateReply&) const = default;
};
// `line` without "\n"; nullopt unless it is a well-formed "ok closed|open ..." reply.
std::optional<BreakerStateReply> parse_breaker_state_reply(std::string_view line);

struct BreakerListLine {
  bool end = false;  // the "end" line; the other fields are empty
  std::string tenant, agent;
  uint64_t retry_after_ms = 0;
  bool operator==(const BreakerListLine&) const = default;
};
std::optional<BreakerListLine> parse_breaker_list_line(std::string_view line);

struct CacheStateReply {
  bool breakdown = false;
  uint32_t competition_permille = 0, miss_permille = 0;  // 0..1000
  uint64_t lookups = 0;
  bool operator==(const CacheStateReply&) const = default;
};
std::optional<CacheStateReply> parse_cache_state_reply(std::string_view line);

// An "error KIND DETAIL" reply's kind; nullopt for any other line.
std::optional<BreakerError> parse_breaker_error_reply(std::string_view line);

}  // namespace tailcause::core
