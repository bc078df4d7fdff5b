// SPDX-License-Identifier: Apache-2.0
// Command-line durations: the accepted spellings and clear refusals of everything else.
#include <gtest/gtest.h>

#include <string>

#include "core/config/duration.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

std::string error_for(const std::string& text) {
  try {
    parse_duration_ns(text);
  } catch (const DurationError& e) {
    return e.what();
  }
  return "";
}

TEST(Duration, SingleUnits) {
  EXPECT_EQ(parse_duration_ns("30s"), 30 * kSecond);
  EXPECT_EQ(parse_duration_ns("5m"), 300 * kSecond);
  EXPECT_EQ(parse_duration_ns("2h"), 7200 * kSecond);
  EXPECT_EQ(parse_duration_ns("1d"), 86400 * kSecond);
  EXPECT_EQ(parse_duration_ns("250ms"), 250'000'000u);
  EXPECT_EQ(parse_duration_ns("7us"), 7'000u);
  EXPECT_EQ(parse_duration_ns("9ns"), 9u);
  EXPECT_EQ(parse_duration_ns("0s"), 0u);
}

TEST(Duration, PartsAddUp) {
  EXPECT_EQ(parse_duration_ns("1h30m"), 5400 * kSecond);
  EXPECT_EQ(parse_duration_ns("1m30s500ms"), 90 * kSecond + 500'000'000);
  EXPECT_EQ(parse_duration_ns("1d2h"), 26 * 3600 * kSecond);
}

TEST(Duration, RejectsEmptyAndNegative) {
  EXPECT_NE(error_for("").find("empty"), std::string::npos);
  EXPECT_NE(error_for("-1h").find("must not be negative"), std::string::npos);
  EXPECT_NE(error_for("+1h").find("no sign"), std::string::npos);
}

TEST(Duration, RejectsUnknownOrMissingUnits) {
  const std::string x = error_for("5x");
  EXPECT_NE(x.find("invalid duration '5x'"), std::string::npos) << x;
  EXPECT_NE(x.find("unknown unit 'x'"), std::string::npos) << x;
  EXPECT_NE(error_for("30").find("missing unit after 30"), std::string::npos);
  EXPECT_NE(error_for("1h30").find("missing unit after 30"), std::string::npos);
  EXPECT_NE(error_for("s").find("expected a number"), std::string::npos);
  EXPECT_NE(error_for("5 m").find("unknown unit ' m'"), std::string::npos);
  EXPECT_NE(error_for("5sec").find("unknown unit 'sec'"), std::string::npos);
  EXPECT_NE(error_for("1.5s").find("whole numbers only"), std::string::npos);
  EXPECT_NE(error_for("5M").find("unknown unit 'M'"), std::string::npos);
}

TEST(Duration, RejectsOverflow) {
  // 2^63 ns is about 292 years: 106752 days is just over, 106751 days just under.
  EXPECT_EQ(parse_duration_ns("106751d"), 106751ull * 86400 * kSecond);
  EXPECT_NE(error_for("106752d").find("too large"), std::string::npos);
  EXPECT_NE(error_for("99999999999999999999s").find("too large"), std::string::npos);
  EXPECT_NE(error_for("106751d23h59m59s").find("too large"), std::string::npos);
  EXPECT_EQ(parse_duration_ns("9223372036854775807ns"), kMaxDurationNs);
  EXPECT_NE(error_for("9223372036854775808ns").find("too large"), std::string::npos);
}

}  // namespace
}  // namespace tailcause::core
