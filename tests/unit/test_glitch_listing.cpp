// SPDX-License-Identifier: Apache-2.0
// `tailcause glitches` output: local ISO times, the table with evidence lines, and JSON with
// every journal field.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "export/glitch_listing.h"

namespace tailcause::exporter {
namespace {

// Sets TZ for one test and restores the previous value afterwards.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  ~ScopedTimeZone() {
    if (old_)
      ::setenv("TZ", old_->c_str(), 1);
    else
      ::unsetenv("TZ");
    ::tzset();
  }

 private:
  std::optional<std::string> old_;
};

constexpr int64_t kT = 1'714'572'187'412'000'000;  // 2024-05-01T14:03:07.412Z

GlitchRow throttled_row() {
  GlitchRow r;
  r.id = 7;
  r.batch = 3;
  r.time_ns = kT;
  r.tenant = "ta";
  r.agent = "rag-agent";
  r.stage = "generation";
  r.wall_seconds = 1.42;
  r.components[tailcause::core::Component::on_cpu] = 0.3;
  r.components[tailcause::core::Component::cpu_throttled] = 0.9;
  r.components[tailcause::core::Component::unattributed] = 0.22;
  r.page_cache_misses = 12;
  r.cause = "cpu_throttled";
  r.verdict = "63% cpu_throttled";
  r.evidence = "generation 1.42 s, 63% cpu_throttled: 41 of 50 periods throttled";
  r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  return r;
}

TEST(GlitchListing, LocalIsoTime) {
  {
    ScopedTimeZone utc("UTC0");
    EXPECT_EQ(format_local_time(kT), "2024-05-01T14:03:07.412+00:00");
  }
  {
    ScopedTimeZone berlin("CET-1CEST,M3.5.0,M10.5.0/3");
    EXPECT_EQ(format_local_time(kT), "2024-05-01T16:03:07.412+02:00");
  }
  ScopedTimeZone utc("UTC0");
  EXPECT_EQ(format_local_time(-1'000'000), "1969-12-31T23:59:59.999+00:00");
}

TEST(GlitchListing, TableExplainsEachRow) {
  ScopedTimeZone utc("UTC0");
  GlitchRow older = throttled_row();
  older.time_ns = kT - 60'000'000'000;
  older.tenant = "tb";
  older.stage = "tool";
  older.wall_seconds = 0.31;
  older.cause = "network";
  older.evidence = "";
  older.verdict = "95% network";
  const std::string text = render_glitch_table({throttled_row(), older}, "in the last 1h");
  EXPECT_NE(text.find("2 glitches in the last 1h, newest first"), std::string::npos) << text;
  EXPECT_NE(text.find("TIME"), std::string::npos);
  const size_t first = text.find("2024-05-01T14:03:07.412+00:00 ta");
  const size_t second = text.find("2024-05-01T14:02:07.412+00:00 tb");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);  // the order given (the journal's: newest first) is kept
  EXPECT_NE(text.find("1.42 s  cpu_throttled"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    generation 1.42 s, 63% cpu_throttled: 41 of 50 periods throttled\n"),
            std::string::npos)
      << text;
  // Without evidence the verdict explains the row.
  EXPECT_NE(text.find("\n    95% network\n"), std::string::npos) << text;
  EXPECT_NE(text.find("310 ms"), std::string::npos) << text;
}

TEST(GlitchListing, EmptyListSaysSo) {
  EXPECT_EQ(render_glitch_table({}, "for tenant ta"), "no glitches for tenant ta\n");
  EXPECT_EQ(render_glitch_table({}, ""), "no glitches\n");
}

// Every component (core/record/schema.h) is listed under its name with its own value.
TEST(GlitchListing, JsonListsEveryComponentByName) {
  GlitchRow r = throttled_row();
  for (auto c : tailcause::core::kAllComponents)
    r.components[c] = 0.5 + static_cast<double>(tailcause::core::index_of(c));
  const auto components = glitch_rows_json({r})[0]["components"];
  ASSERT_EQ(components.size(), tailcause::core::kComponents);
  for (auto c : tailcause::core::kAllComponents) {
    const char* name = tailcause::core::component_name(c);
    SCOPED_TRACE(name);
    ASSERT_TRUE(components.contains(name));
    EXPECT_DOUBLE_EQ(components[name].get<double>(),
                     0.5 + static_cast<double>(tailcause::core::index_of(c)));
  }
}

TEST(GlitchListing, JsonHasEveryField) {
  ScopedTimeZone utc("UTC0");
  const auto json = glitch_rows_json({throttled_row()});
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  const auto& o = json[0];
  EXPECT_EQ(o["id"], 7);
  EXPECT_EQ(o["batch"], 3);
  EXPECT_EQ(o["time_ns"], kT);
  EXPECT_EQ(o["time"], "2024-05-01T14:03:07.412+00:00");
  EXPECT_EQ(o["tenant"], "ta");
  EXPECT_EQ(o["agent"], "rag-agent");
  EXPECT_EQ(o["stage"], "generation");
  EXPECT_DOUBLE_EQ(o["wall_seconds"].get<double>(), 1.42);
  ASSERT_TRUE(o["components"].is_object());
  EXPECT_EQ(o["components"].size(), 9u);
  EXPECT_DOUBLE_EQ(o["components"]["cpu_throttled"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(o["components"]["on_cpu"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(o["components"]["unattributed"].get<double>(), 0.22);
  EXPECT_DOUBLE_EQ(o["components"]["gpu"].get<double>(), 0.0);
  EXPECT_EQ(o["page_cache_misses"], 12);
  EXPECT_EQ(o["cause"], "cpu_throttled");
  EXPECT_EQ(o["verdict"], "63% cpu_throttled");
  EXPECT_EQ(o["evidence"], "generation 1.42 s, 63% cpu_throttled: 41 of 50 periods throttled");
  EXPECT_EQ(o["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_TRUE(glitch_rows_json({}).is_array());
  EXPECT_TRUE(glitch_rows_json({}).empty());
}

}  // namespace
}  // namespace tailcause::exporter
