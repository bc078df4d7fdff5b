// SPDX-License-Identifier: Apache-2.0
// `tailcause top`'s screen: rows from the API's replies, sorting by key, colour only when
// asked, and every line within a narrow terminal's width.
#include <gtest/gtest.h>

#include "core/report/top_view.h"

namespace tailcause::core {
namespace {

nlohmann::json stages() {
  return nlohmann::json::parse(R"({"series": [
    {"tenant": "ta", "stage": "generation", "largest_component": "cpu_throttled", "count": 40,
     "p50_s": 0.6, "p99_s": 1.2, "glitches": 38},
    {"tenant": "tb", "stage": "retrieval", "largest_component": "on_cpu", "count": 90,
     "p50_s": 0.002, "p99_s": 0.004, "glitches": 0},
    {"tenant": "a-very-long-tenant-name-indeed", "stage": "tool", "largest_component": "",
     "count": 5, "p50_s": 0.03, "p99_s": 0.05, "glitches": 1}]})");
}
nlohmann::json caches() {
  return nlohmann::json::parse(R"({"caches": [
    {"tenant": "ta", "cache": "vec", "breakdown_ratio": 0.7, "state": "breakdown"},
    {"tenant": "tb", "cache": "vec", "breakdown_ratio": null, "state": "ok"}]})");
}
nlohmann::json contention() {
  return nlohmann::json::parse(R"({"breakers": [{"tenant": "ta", "agent": "rag", "open": true}]})");
}

size_t visible(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    ++n;
  }
  return n;
}

TEST(TopView, RowsJoinStagesCachesAndBreakers) {
  const auto rows = top_rows(stages(), caches(), contention());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].tenant, "ta");
  EXPECT_TRUE(rows[0].cache_breakdown);
  EXPECT_DOUBLE_EQ(*rows[0].cache_ratio, 0.7);
  EXPECT_TRUE(*rows[0].breaker_open);
  EXPECT_FALSE(rows[1].cache_ratio);  // no ratio yet
  EXPECT_FALSE(rows[1].breaker_open);
  EXPECT_THROW(top_rows(nlohmann::json::object(), caches(), contention()),
               nlohmann::json::exception);
}

TEST(TopView, WideScreenShowsEveryColumnSortedByP99) {
  TopScreen s;
  s.width = 120;
  s.color = false;
  const auto lines = render_top(top_rows(stages(), caches(), contention()), s);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_NE(lines[2].find("LARGEST"), std::string::npos);
  EXPECT_NE(lines[2].find("BREAKER"), std::string::npos);
  EXPECT_EQ(lines[3].rfind("ta ", 0), 0u) << lines[3];  // slowest P99 first
  EXPECT_NE(lines[3].find("1.20s"), std::string::npos);
  EXPECT_NE(lines[3].find("cpu_throttled"), std::string::npos);
  EXPECT_NE(lines[3].find("70%!"), std::string::npos);
  EXPECT_NE(lines[3].find("OPEN"), std::string::npos);
  for (const auto& l : lines) EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
}

TEST(TopView, KeysSort) {
  TopScreen s;
  s.width = 120;
  s.color = false;
  s.sort = *top_sort_for_key('n');
  auto lines = render_top(top_rows(stages(), caches(), contention()), s);
  EXPECT_EQ(lines[3].rfind("tb ", 0), 0u) << lines[3];  // most stages first
  s.sort = *top_sort_for_key('t');
  lines = render_top(top_rows(stages(), caches(), contention()), s);
  EXPECT_EQ(lines[3].rfind("a-very", 0), 0u) << lines[3];
  EXPECT_FALSE(top_sort_for_key('x'));
}

TEST(TopView, NarrowTerminalsKeepTheEssentialsWithinTheirWidth) {
  for (int width : {30, 40, 60, 80}) {
    TopScreen s;
    s.width = width;
    s.height = 5;
    s.color = true;
    const auto lines = render_top(top_rows(stages(), caches(), contention()), s);
    EXPECT_LE(lines.size(), 5u);
    for (const auto& l : lines)
      EXPECT_LE(visible(l), static_cast<size_t>(width)) << width << ": " << l;
    EXPECT_NE(lines[2].find("P99"), std::string::npos) << width;
    EXPECT_NE(lines[0].find("\x1b[1m"), std::string::npos);  // colour when asked
  }
}

TEST(TopView, NoStagesSaysSo) {
  TopScreen s;
  s.color = false;
  const auto lines = render_top({}, s);
  EXPECT_NE(lines.back().find("no stages seen"), std::string::npos);
}

}  // namespace
}  // namespace tailcause::core
