// SPDX-License-Identifier: Apache-2.0
// The breaker socket's line protocol: request parsing (good and bad lines), percent-encoding,
// the server's replies and the client's reply parsers, and answers from a real CircuitBreaker.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <variant>

#include "core/detect/breaker_protocol.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

BreakerRequest parse_ok(std::string_view line) {
  auto r = parse_breaker_request(line);
  EXPECT_TRUE(std::holds_alternative<BreakerRequest>(r)) << line;
  return std::holds_alternative<BreakerRequest>(r) ? std::get<BreakerRequest>(r) : BreakerRequest{};
}

BreakerError parse_error(std::string_view line) {
  auto r = parse_breaker_request(line);
  EXPECT_TRUE(std::holds_alternative<BreakerParseError>(r)) << line;
  return std::holds_alternative<BreakerParseError>(r) ? std::get<BreakerParseError>(r).kind
                                                      : BreakerError::internal;
}

TEST(BreakerProtocol, ParsesTheBreakerCommands) {
  EXPECT_EQ(parse_ok("ping").command, BreakerCommand::ping);
  EXPECT_EQ(parse_ok("list").command, BreakerCommand::list);
  BreakerRequest r = parse_ok("state acme rag");
  EXPECT_EQ(r.command, BreakerCommand::state);
  EXPECT_EQ(r.tenant, "acme");
  EXPECT_EQ(r.agent, "rag");
  // A "\r" before the "\n" (telnet, socat CRLF) and extra spaces are tolerated.
  EXPECT_EQ(parse_ok("ping\r").command, BreakerCommand::ping);
  EXPECT_EQ(parse_ok("  state   acme  rag ").agent, "rag");
}

TEST(BreakerProtocol, DecodesPercentEncodedFields) {
  BreakerRequest r = parse_ok("state ten%20ant%25x a%09%00b");
  EXPECT_EQ(r.tenant, "ten ant%x");
  EXPECT_EQ(r.agent, std::string("a\t\0b", 4));
  r = parse_ok("state % %");  // both empty
  EXPECT_EQ(r.tenant, "");
  EXPECT_EQ(r.agent, "");
  r = parse_ok("state mandant-\xc3\xbc %e6%9d%b1");  // raw UTF-8 or encoded: both fine
  EXPECT_EQ(r.tenant, "mandant-\xc3\xbc");
  EXPECT_EQ(r.agent, "\xe6\x9d\xb1");
  r = parse_ok("state %FF%fe x");  // bytes that are not UTF-8 travel encoded
  EXPECT_EQ(r.tenant, "\xff\xfe");
}

TEST(BreakerProtocol, RejectsBadRequestsWithTheirKind) {
  EXPECT_EQ(parse_error(""), BreakerError::unknown_command);
  EXPECT_EQ(parse_error("   "), BreakerError::unknown_command);
  EXPECT_EQ(parse_error("PING"), BreakerError::unknown_command);
  EXPECT_EQ(parse_error("reset acme rag"), BreakerError::unknown_command);
  EXPECT_EQ(parse_error("GET / HTTP/1.1"), BreakerError::unknown_command);
  EXPECT_EQ(parse_error("ping now"), BreakerError::arity);
  EXPECT_EQ(parse_error("list all"), BreakerError::arity);
  EXPECT_EQ(parse_error("state acme"), BreakerError::arity);
  EXPECT_EQ(parse_error("state acme rag extra"), BreakerError::arity);
  for (const char* bad :
       {"state a%2 b", "state a% b", "state a b%zz", "state %% b", "state a%g0 b"}) {
    EXPECT_EQ(parse_error(bad), BreakerError::encoding) << bad;
  }
  EXPECT_EQ(parse_error(std::string("state a\0b c", 11)), BreakerError::encoding);
  EXPECT_EQ(parse_error("state a\tb c"), BreakerError::encoding);
  EXPECT_EQ(parse_error("state a\x7f c"), BreakerError::encoding);
  EXPECT_EQ(parse_error("state \xff b"), BreakerError::not_utf8);
  EXPECT_EQ(parse_error("state \xc3 b"), BreakerError::not_utf8);          // truncated sequence
  EXPECT_EQ(parse_error("state \xed\xa0\x80 b"), BreakerError::not_utf8);  // a surrogate
  // 511 bytes + "\n" is the longest request; one more is too long.
  std::string longest = "state " + std::string(511 - 8, 'x') + " y";
  ASSERT_EQ(longest.size(), 511u);
  EXPECT_EQ(parse_ok(longest).agent, "y");
  EXPECT_EQ(parse_error(longest + "y"), BreakerError::too_long);
}

TEST(BreakerProtocol, ErrorDetailsAreOneCleanLine) {
  auto r = parse_breaker_request(std::string("\x01\x02garbage\n\n", 11));
  ASSERT_TRUE(std::holds_alternative<BreakerParseError>(r));
  const auto& e = std::get<BreakerParseError>(r);
  const std::string reply = format_breaker_error(e.kind, e.detail);
  EXPECT_EQ(reply.find('\n'), reply.size() - 1) << reply;
  for (unsigned char ch : reply.substr(0, reply.size() - 1)) EXPECT_GE(ch, 0x20) << reply;
  EXPECT_EQ(parse_breaker_error_reply(reply.substr(0, reply.size() - 1)), BreakerError::encoding);
  // The command is echoed only when it is short printable ASCII.
  auto echoed = std::get<BreakerParseError>(parse_breaker_request("frobnicate")).detail;
  EXPECT_NE(echoed.find("\"frobnicate\""), std::string::npos) << echoed;
  auto hidden = std::get<BreakerParseError>(parse_breaker_request("fr\"ob")).detail;
  EXPECT_EQ(hidden.find("fr"), std::string::npos) << hidden;
  EXPECT_EQ(format_breaker_error(BreakerError::busy), "error busy\n");
}

TEST(BreakerProtocol, EncodingRoundTripsEveryByte) {
  EXPECT_EQ(breaker_percent_encode(""), "%");
  EXPECT_EQ(breaker_percent_encode("a b%c"), "a%20b%25c");
  EXPECT_EQ(breaker_percent_encode("t\xc3\xbc"), "t\xc3\xbc");  // valid UTF-8 stays raw
  EXPECT_EQ(breaker_percent_encode("\xc3"), "%C3");             // a partial sequence does not
  EXPECT_EQ(breaker_percent_encode("\xff\x80x"), "%FF%80x");
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; i++) {
    std::string raw(rng() % 24, '\0');
    for (auto& ch : raw) ch = static_cast<char>(rng() % 256);
    const std::string enc = breaker_percent_encode(raw);
    // An encoded field is one token of a valid request line.
    auto r = parse_breaker_request("state " + enc + " " + enc);
    ASSERT_TRUE(std::holds_alternative<BreakerRequest>(r)) << enc;
    EXPECT_EQ(std::get<BreakerRequest>(r).tenant, raw);
    EXPECT_EQ(breaker_percent_decode(enc), raw);
  }
}

TEST(BreakerProtocol, RandomGarbageNeverParsesAsSomethingElse) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; i++) {
    std::string line(rng() % 700, '\0');
    for (auto& ch : line) ch = static_cast<char>(rng() % 256);
    auto r = parse_breaker_request(line);
    if (auto* req = std::get_if<BreakerRequest>(&r)) {
      // Only possible when the bytes happen to spell a command: then it round-trips.
      EXPECT_EQ(std::get<BreakerRequest>(
                    parse_breaker_request(std::string_view(format_breaker_request(*req))
                                              .substr(0, format_breaker_request(*req).size() - 1))),
                *req);
    }
  }
}

TEST(BreakerProtocol, RequestsFormattedByTheClientParseBack) {
  for (const BreakerRequest& req :
       {BreakerRequest{BreakerCommand::ping, "", "", ""},
        BreakerRequest{BreakerCommand::list, "", "", ""},
        BreakerRequest{BreakerCommand::state, "tenant with space", "a%b", ""},
        BreakerRequest{BreakerCommand::cache, "t\x01", "", "cache %x"},
        BreakerRequest{BreakerCommand::state, "", "\xe6\x9d\xb1\xff", ""}}) {
    const std::string line = format_breaker_request(req);
    ASSERT_EQ(line.back(), '\n');
    auto r = parse_breaker_request(std::string_view(line).substr(0, line.size() - 1));
    ASSERT_TRUE(std::holds_alternative<BreakerRequest>(r)) << line;
    EXPECT_EQ(std::get<BreakerRequest>(r), req);
  }
}

TEST(BreakerProtocol, StateRepliesRoundTripAndBadOnesAreRefused) {
  EXPECT_EQ(format_breaker_state(BreakerState::open, 4, 1500),
            "ok open consecutive=4 retry_after_ms=1500\n");
  auto r = parse_breaker_state_reply("ok open consecutive=4 retry_after_ms=1500");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (BreakerStateReply{BreakerState::open, 4, 1500}));
  r = parse_breaker_state_reply("ok closed consecutive=0 retry_after_ms=0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, BreakerState::closed);
  for (const char* bad :
       {"", "ok", "ok pong", "ok shut consecutive=0 retry_after_ms=0",
        "ok open consecutive=x retry_after_ms=0", "ok open consecutive=1 retry_after_ms=",
        "ok open retry_after_ms=1 consecutive=1", "ok open consecutive=4294967296 retry_after_ms=1",
        "ok open consecutive=1 retry_after_ms=99999999999999999999", "error busy",
        "ok open consecutive=1 retry_after_ms=1 more"}) {
    EXPECT_FALSE(parse_breaker_state_reply(bad)) << bad;
  }
}

TEST(BreakerProtocol, ListRepliesRoundTrip) {
  std::vector<BreakerView> views = {
      {"acme", "rag", BreakerState::open, 3, 1500 * ms},
      {"closed one", "x", BreakerState::closed, 1, 0},
      {"t y", "", BreakerState::open, 5, 1},  // 1 ns rounds up to 1 ms: open never says 0
  };
  const std::string text = format_breaker_list(views);
  EXPECT_EQ(text, "open acme rag retry_after_ms=1500\nopen t%20y % retry_after_ms=1\nend\n");
  std::vector<BreakerListLine> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    auto line = parse_breaker_list_line(std::string_view(text).substr(start, nl - start));
    ASSERT_TRUE(line);
    lines.push_back(*line);
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].tenant, "t y");
  EXPECT_EQ(lines[1].agent, "");
  EXPECT_TRUE(lines[2].end);
  EXPECT_FALSE(parse_breaker_list_line("open a b"));
  EXPECT_FALSE(parse_breaker_list_line("open a%z b retry_after_ms=1"));
  EXPECT_EQ(format_breaker_list({}), "end\n");
}

TEST(BreakerViews, RetryAfterAndOpenBreakers) {
  BreakerConfig cfg;
  cfg.quiet_ns = 1000 * ms;
  CircuitBreaker b(cfg);
  for (uint64_t t = 1; t <= 3; t++) b.observe("b", "x", 500 * ms, t * 100 * ms);
  for (uint64_t t = 1; t <= 3; t++) b.observe("a", "y", 500 * ms, t * 200 * ms);
  b.observe("c", "z", 500 * ms, 100 * ms);
  EXPECT_EQ(b.retry_after_ns("b", "x", 300 * ms), 1000 * ms);
  EXPECT_EQ(b.retry_after_ns("b", "x", 1000 * ms), 300 * ms);
  EXPECT_EQ(b.retry_after_ns("b", "x", 1300 * ms), 0u);
  EXPECT_EQ(b.retry_after_ns("c", "z", 300 * ms), 0u);  // closed
  EXPECT_EQ(b.retry_after_ns("nobody", "z", 300 * ms), 0u);
  auto open = b.open_breakers(1000 * ms);
  ASSERT_EQ(open.size(), 2u);  // ordered by (tenant, agent)
  EXPECT_EQ(open[0].tenant, "a");
  EXPECT_EQ(open[0].retry_after_ns, 600 * ms);
  EXPECT_EQ(open[1].tenant, "b");
  EXPECT_EQ(open[1].consecutive, 3u);
  open = b.open_breakers(1300 * ms);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].tenant, "a");
  const auto all = b.entries(1300 * ms);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].state, BreakerState::closed);  // "b" has waited out its quiet period
  EXPECT_EQ(all[1].consecutive, 0u);
  EXPECT_EQ(all[2].consecutive, 1u);
}

TEST(BreakerProtocol, AnswersFromARealBreaker) {
  BreakerConfig cfg;
  cfg.quiet_ns = 1000 * ms;
  CircuitBreaker b(cfg);
  for (uint64_t t = 1; t <= 3; t++) b.observe("acme", "rag agent", 500 * ms, t * 100 * ms);
  b.observe("acme", "chat", 500 * ms, 100 * ms);
  const auto state = [&](std::string t, std::string a, uint64_t now) {
    return answer_breaker_request(b, {BreakerCommand::state, t, a, ""}, now);
  };
  // Opened at 300 ms: quiet until 1300 ms.
  EXPECT_EQ(state("acme", "rag agent", 400 * ms), "ok open consecutive=3 retry_after_ms=900\n");
  EXPECT_EQ(state("acme", "rag agent", 1299 * ms + 1), "ok open consecutive=3 retry_after_ms=1\n");
  EXPECT_EQ(state("acme", "rag agent", 1300 * ms), "ok closed consecutive=0 retry_after_ms=0\n");
  EXPECT_EQ(state("acme", "chat", 400 * ms), "ok closed consecutive=1 retry_after_ms=0\n");
  EXPECT_EQ(state("nobody", "x", 400 * ms), "ok closed consecutive=0 retry_after_ms=0\n");
  EXPECT_EQ(answer_breaker_request(b, {BreakerCommand::list, "", "", ""}, 400 * ms),
            "open acme rag%20agent retry_after_ms=900\nend\n");
  EXPECT_EQ(answer_breaker_request(b, {BreakerCommand::list, "", "", ""}, 1300 * ms), "end\n");
  EXPECT_EQ(answer_breaker_request(b, {BreakerCommand::ping, "", "", ""}, 0), "ok pong\n");
}

TEST(BreakerProtocol, TheCacheCommandAnswersFromARealBreakdownDetector) {
  BreakerRequest r = parse_ok("cache ten%20a retrieval");
  EXPECT_EQ(r.command, BreakerCommand::cache);
  EXPECT_EQ(r.tenant, "ten a");
  EXPECT_EQ(r.cache, "retrieval");
  EXPECT_EQ(format_breaker_request(r), "cache ten%20a retrieval\n");
  EXPECT_EQ(parse_error("cache ten"), BreakerError::arity);
  EXPECT_EQ(parse_error("cache a b c"), BreakerError::arity);
  EXPECT_EQ(parse_error("cache a%zz b"), BreakerError::encoding);
  EXPECT_EQ(parse_error("cache a b%2"), BreakerError::encoding);

  // Tenant "flood" misses all 40 of its lookups, "steady" 2 of 40 (window 60 s, 20 lookups, 0.5).
  CacheBreakdownDetector caches(CacheBreakdownSettings{60, 20, 0.5, 0});
  const uint64_t t0 = 10'000 * ms;
  for (int i = 0; i < 40; ++i) {
    CacheRecord rec;
    rec.cache = "retrieval";
    rec.time_ns = t0 + static_cast<uint64_t>(i) * ms;
    rec.id.tenant = "flood";
    rec.result = 1;
    caches.observe(rec);
    rec.id.tenant = "steady";
    rec.result = i < 2 ? 1 : 0;
    caches.observe(rec);
  }
  CircuitBreaker b{BreakerConfig{}};
  const auto ask = [&](std::string tenant, const CacheBreakdownDetector* d) {
    const BreakerRequest q{BreakerCommand::cache, std::move(tenant), "", "retrieval"};
    return answer_breaker_request(b, q, t0 + 100 * ms, d);
  };
  // flood: 40 of the cache's 42 misses, all of its lookups: 0.952.
  EXPECT_EQ(ask("flood", &caches),
            "ok breakdown competition_permille=952 miss_permille=1000 lookups=40\n");
  // steady: 2/42 x 2/40.
  EXPECT_EQ(ask("steady", &caches),
            "ok healthy competition_permille=2 miss_permille=50 lookups=40\n");
  EXPECT_EQ(ask("nobody", &caches),
            "ok healthy competition_permille=0 miss_permille=0 lookups=0\n");
  EXPECT_EQ(ask("flood", nullptr), "ok healthy competition_permille=0 miss_permille=0 lookups=0\n");

  // The client's parser takes what the server writes, and nothing malformed.
  EXPECT_EQ(parse_cache_state_reply(
                "ok breakdown competition_permille=952 miss_permille=1000 lookups=40"),
            (CacheStateReply{true, 952, 1000, 40}));
  EXPECT_EQ(parse_cache_state_reply("ok healthy competition_permille=0 miss_permille=0 lookups=0"),
            (CacheStateReply{}));
  for (const char* bad : {"ok broken competition_permille=1 miss_permille=1 lookups=1",
                          "ok healthy competition_permille=1001 miss_permille=1 lookups=1",
                          "ok healthy competition_permille=-1 miss_permille=1 lookups=1",
                          "ok healthy competition_permille=1 miss_permille=1",
                          "ok healthy miss_permille=1 competition_permille=1 lookups=1",
                          "ok closed consecutive=0 retry_after_ms=0", "error arity x"}) {
    EXPECT_FALSE(parse_cache_state_reply(bad)) << bad;
  }
}

}  // namespace
}  // namespace tailcause::core
