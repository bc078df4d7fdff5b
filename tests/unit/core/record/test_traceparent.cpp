// SPDX-License-Identifier: Apache-2.0
// W3C traceparent as the SDK passes it through request_begin: every rule of the spec, and the
// bare trace id the SDK has always accepted.
#include "core/record/traceparent.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tailcause::core {
namespace {

constexpr const char* kGood = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ParsesVersion00) {
  const auto tp = parse_traceparent(kGood);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(tp->parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(tp->flags, 1);
  EXPECT_TRUE(tp->sampled());
  const auto unsampled =
      parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled());
  EXPECT_EQ(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff")->flags,
            0xff);
}

TEST(Traceparent, RefusesEveryMalformedValue) {
  const std::string good = kGood;
  auto with = [&](size_t pos, const std::string& s) {
    std::string v = good;
    v.replace(pos, s.size(), s);
    return v;
  };
  for (const std::string& bad : std::vector<std::string>{
           std::string(),
           good.substr(0, 54),              // one short
           good + "-",                      // 00 is exactly 55
           good + "0",                      //
           with(0, "ff"),                   // version ff is invalid
           with(0, "0A"),                   // upper-case version
           with(0, "0g"),                   //
           with(3, "4BF92F3577B34DA6"),     // upper-case trace id
           with(3, std::string(32, '0')),   // all-zero trace id
           with(36, std::string(16, '0')),  // all-zero parent id
           with(36, "00F067AA0BA902B7"),    // upper-case parent id
           with(53, "0x"),                  // flags not hex
           with(53, "0F"),                  // upper-case flags
           with(2, "_"),
           with(35, "_"),
           with(52, "_"),  // separators
           with(10, "\n"),
           with(40, std::string(1, '\0')),                             // control bytes
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",   // short flags
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  // misplaced dash
       }) {
    EXPECT_FALSE(parse_traceparent(bad)) << "'" << bad << "'";
    EXPECT_FALSE(parse_trace_context(bad)) << "'" << bad << "'";
  }
}

TEST(Traceparent, LaterVersionsMayCarryMore) {
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_TRUE(
      parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-"
                        "will-be-like"));
  // ... but only after a '-'.
  EXPECT_FALSE(
      parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.what-the-future"));
}

TEST(Traceparent, TraceContextAcceptsABareTraceId) {
  const auto bare = parse_trace_context("4BF92F3577B34DA6A3CE929D0E0E4736");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");  // lower-cased
  EXPECT_TRUE(bare->parent_span_id.empty());
  EXPECT_FALSE(parse_trace_context(std::string(32, '0')));
  EXPECT_FALSE(parse_trace_context("4bf92f3577b34da6a3ce929d0e0e473g"));
  EXPECT_FALSE(parse_trace_context("xyz"));
  const auto full = parse_trace_context(kGood);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->parent_span_id, "00f067aa0ba902b7");
}

}  // namespace
}  // namespace tailcause::core
