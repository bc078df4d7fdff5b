// SPDX-License-Identifier: Apache-2.0
// Incidents in the journal (schema v2): written when they open and rewritten by key as they
// grow and end, queried newest first with the glitch filters (a stage matches any stage an
// incident slowed), a v1 journal upgraded in place, pruning by age, rows a killed writer left
// active closed by the next one; and their listing for `tailcause glitches --incidents`.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "export/incident_listing.h"
#include "export/journal.h"
#include "temp_dir.h"

namespace tailcause::exporter {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kSecond;

IncidentRow incident(std::string key, int64_t start_ns, std::string tenant, std::string stages,
                     bool active = false) {
  IncidentRow r;
  r.key = std::move(key);
  r.start_ns = start_ns;
  r.end_ns = start_ns + 20 * kSecond;
  r.active = active;
  r.tenant = std::move(tenant);
  r.stages = std::move(stages);
  r.stage = r.stages.substr(0, r.stages.find(','));
  r.cause = "block_io";
  r.cause_share = 0.91;
  r.slowed = 84;
  r.peak_ratio = 12.5;
  r.median_ratio = 4.8;
  r.baseline_seconds = 0.0031;
  r.summary = "retrieval 4.8x its 3.1 ms baseline";
  return r;
}

std::vector<IncidentRow> all(const Journal& j, JournalFilter f = {}) {
  f.limit = Journal::kMaxQueryLimit;
  return j.query_incidents(f);
}

int exec_raw(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc;
}

TEST(JournalIncidents, WrittenThenRewrittenByKey) {
  testing::TempDir dir;
  Journal j(dir.file("j.db"), JournalLimits{});
  IncidentRow open = incident("run-0-1", kNow, "ta", "retrieval", /*active=*/true);
  open.slowed = 8;
  j.write_incidents({open});
  auto rows = all(j);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].active);
  EXPECT_EQ(rows[0].slowed, 8);
  const int64_t id = rows[0].id;

  IncidentRow ended = incident("run-0-1", kNow, "ta", "retrieval,generation");
  j.write_incidents({ended});
  rows = all(j);
  ASSERT_EQ(rows.size(), 1u);
  const IncidentRow& r = rows[0];
  EXPECT_EQ(r.id, id);
  EXPECT_FALSE(r.active);
  EXPECT_EQ(r.key, "run-0-1");
  EXPECT_EQ(r.start_ns, kNow);
  EXPECT_EQ(r.end_ns, kNow + 20 * kSecond);
  EXPECT_EQ(r.tenant, "ta");
  EXPECT_EQ(r.stage, "retrieval");
  EXPECT_EQ(r.stages, "retrieval,generation");
  EXPECT_EQ(r.cause, "block_io");
  EXPECT_DOUBLE_EQ(r.cause_share, 0.91);
  EXPECT_EQ(r.slowed, 84);
  EXPECT_DOUBLE_EQ(r.peak_ratio, 12.5);
  EXPECT_DOUBLE_EQ(r.median_ratio, 4.8);
  EXPECT_DOUBLE_EQ(r.baseline_seconds, 0.0031);
  EXPECT_EQ(r.summary, "retrieval 4.8x its 3.1 ms baseline");
  EXPECT_EQ(j.incident_count(), 1);
  EXPECT_THROW(j.write_incidents({incident("", kNow, "ta", "tool")}), std::invalid_argument);
  EXPECT_EQ(j.incident_count(), 1);  // the transaction rolled back
}

TEST(JournalIncidents, QueriesFilterLikeGlitches) {
  testing::TempDir dir;
  Journal j(dir.file("j.db"), JournalLimits{});
  j.write_incidents({incident("k1", kNow - 3600 * kSecond, "ta", "retrieval"),
                     incident("k2", kNow - 60 * kSecond, "tb", "embedding,generation"),
                     incident("k3", kNow - 7200 * kSecond, "ta", "generation", true)});
  auto rows = all(j);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].key, "k2");  // newest start first
  EXPECT_EQ(rows[2].key, "k3");
  JournalFilter ta;
  ta.tenant = "ta";
  EXPECT_EQ(all(j, ta).size(), 2u);
  JournalFilter gen;
  gen.stage = "generation";  // any stage it slowed, not a prefix or a substring
  EXPECT_EQ(all(j, gen).size(), 2u);
  gen.stage = "gen";
  EXPECT_TRUE(all(j, gen).empty());
  JournalFilter recent;
  recent.since_ns = kNow - 600 * kSecond;  // k2 ended since; k3 is still active
  rows = all(j, recent);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "k2");
  EXPECT_EQ(rows[1].key, "k3");
  JournalFilter one;
  one.limit = 1;
  EXPECT_EQ(j.query_incidents(one).size(), 1u);
  JournalFilter bad;
  bad.limit = 0;
  EXPECT_THROW(j.query_incidents(bad), std::invalid_argument);
  bad = JournalFilter{};
  bad.stage = "";
  EXPECT_THROW(j.query_incidents(bad), std::invalid_argument);
}

TEST(JournalIncidents, AVersion1JournalIsUpgradedKeepingItsGlitches) {
  testing::TempDir dir;
  const std::string path = dir.file("j.db");
  {
    Journal j(path, JournalLimits{});
    GlitchRow g;
    g.time_ns = kNow;
    g.tenant = "ta";
    g.agent = "a";
    g.stage = "retrieval";
    g.cause = "block_io";
    j.append({g});
  }
  // What a version 1 journal is: glitches only.
  ASSERT_EQ(exec_raw(path,
                     "DROP TABLE incidents; DROP TABLE propagation; DROP TABLE baselines; "
                     "DROP INDEX glitches_trace; PRAGMA user_version=1;"),
            SQLITE_OK);
  Journal j(path, JournalLimits{});
  JournalFilter f;
  EXPECT_EQ(j.query(f).size(), 1u);
  EXPECT_EQ(j.incident_count(), 0);
  j.write_incidents({incident("k1", kNow, "ta", "retrieval")});
  EXPECT_EQ(all(j).size(), 1u);
  EXPECT_EQ(j.propagation_count(), 0);  // and upgraded on to the current version
  EXPECT_TRUE(j.read_baselines().empty());
}

TEST(JournalPropagation, AVersion2JournalIsUpgradedKeepingItsRows) {
  testing::TempDir dir;
  const std::string path = dir.file("j.db");
  {
    Journal j(path, JournalLimits{});
    j.write_incidents({incident("k1", kNow, "ta", "retrieval")});
  }
  // What a version 2 journal is: glitches and incidents.
  ASSERT_EQ(exec_raw(path,
                     "DROP TABLE propagation; DROP TABLE baselines; DROP INDEX glitches_trace; "
                     "PRAGMA user_version=2;"),
            SQLITE_OK);
  Journal j(path, JournalLimits{});
  EXPECT_EQ(j.incident_count(), 1);
  j.write_propagation({{std::string(32, 'c'), kNow, "{}"}});
  EXPECT_EQ(j.propagation_count(), 1);
}

TEST(JournalBaselines, KeptWholeReplacedEachTimeAndAVersion3JournalGetsThem) {
  testing::TempDir dir;
  const std::string path = dir.file("j.db");
  {
    Journal j(path, JournalLimits{});
    j.write_incidents({incident("k1", kNow, "ta", "retrieval")});
  }
  ASSERT_EQ(exec_raw(path, "DROP TABLE baselines; PRAGMA user_version=3;"), SQLITE_OK);
  Journal j(path, JournalLimits{});
  EXPECT_EQ(j.incident_count(), 1);
  EXPECT_TRUE(j.read_baselines().empty());
  BaselineRow a{"ta", "retrieval", kNow, 500, {0.5, 0.25, 1e-9}, {1.0, 2.0}};
  BaselineRow b{"tb", "generation", kNow, 40, {}, {}};
  j.write_baselines({a, b});
  auto rows = j.read_baselines();
  ASSERT_EQ(rows.size(), 2u);
  const auto& ra = rows[0].tenant == "ta" ? rows[0] : rows[1];
  EXPECT_EQ(ra.stage, "retrieval");
  EXPECT_EQ(ra.count, 500);
  EXPECT_EQ(ra.weights, a.weights);
  EXPECT_EQ(ra.mix, a.mix);
  j.write_baselines({b});  // the set as it stands now: a is gone
  rows = j.read_baselines();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tenant, "tb");
  // A blob that is not whole doubles (a damaged or foreign row) reads as no weights.
  ASSERT_EQ(exec_raw(path, "UPDATE baselines SET weights = x'0102030405'"), SQLITE_OK);
  EXPECT_TRUE(j.read_baselines().at(0).weights.empty());
}

TEST(JournalPropagation, TreesAreFoundByTraceIdOrAUniquePrefix) {
  testing::TempDir dir;
  Journal j(dir.file("j.db"), JournalLimits{});
  const std::string a = "4bf92f3577b34da6a3ce929d0e0e4736", b = "4bf92f3500000000000000000000aaaa";
  j.write_propagation({{a, kNow, "{\"x\":1}"}, {b, kNow + 1, "{\"x\":2}"}});
  EXPECT_EQ(j.propagation_count(), 2);
  auto rows = j.find_propagation(a);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tree, "{\"x\":1}");
  EXPECT_EQ(rows[0].time_ns, kNow);
  EXPECT_EQ(j.find_propagation("4bf92f3577b3").size(), 1u);
  EXPECT_EQ(j.find_propagation("4bf92f35").size(), 2u);      // ambiguous: the caller says so
  EXPECT_EQ(j.find_propagation("4bf92f35")[0].trace_id, b);  // newest first
  EXPECT_TRUE(j.find_propagation("ffffffff").empty());
  // A rewrite replaces the tree.
  j.write_propagation({{a, kNow, "{\"x\":3}"}});
  EXPECT_EQ(j.find_propagation(a)[0].tree, "{\"x\":3}");
  EXPECT_EQ(j.propagation_count(), 2);
  // Anything but 1..32 lower-case hex digits is refused before any SQL (no LIKE, no ranges).
  const std::vector<std::string> bad_prefixes = {"", "4BF92F35", "4bf9%", "4bf9'--",
                                                 std::string(33, 'a')};
  for (const std::string& bad : bad_prefixes) {
    EXPECT_THROW(j.find_propagation(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(j.find_propagation(a, 0), std::invalid_argument);
  EXPECT_THROW(j.write_propagation({{"", kNow, "{}"}}), std::invalid_argument);
}

TEST(JournalPropagation, GlitchRowsOfATraceAndPruningWithThem) {
  testing::TempDir dir;
  JournalLimits limits;
  limits.max_age = std::chrono::hours(1);
  Journal j(dir.file("j.db"), limits);
  auto row = [](int64_t t, const std::string& trace) {
    GlitchRow g;
    g.time_ns = t;
    g.tenant = "ta";
    g.agent = "a";
    g.stage = "retrieval";
    g.cause = "lock";
    g.trace_id = trace;
    return g;
  };
  const std::string old_trace(32, 'a'), new_trace(32, 'b');
  j.append({row(kNow - 7200 * kSecond, old_trace), row(kNow, new_trace), row(kNow, new_trace)});
  j.write_propagation({{old_trace, kNow - 7200 * kSecond, "{}"}, {new_trace, kNow, "{}"}});
  JournalFilter f;
  f.trace_id = new_trace;
  EXPECT_EQ(j.query(f).size(), 2u);
  f.trace_id = "";
  EXPECT_THROW(j.query(f), std::invalid_argument);
  j.prune(kNow);
  EXPECT_EQ(j.propagation_count(), 1);  // the old tree went with its glitch rows
  EXPECT_EQ(j.find_propagation(new_trace).size(), 1u);
}

TEST(JournalIncidents, PrunedByAgeOnceEnded) {
  testing::TempDir dir;
  JournalLimits limits;
  limits.max_age = std::chrono::hours(1);
  Journal j(dir.file("j.db"), limits);
  j.write_incidents({incident("old", kNow - 7200 * kSecond, "ta", "retrieval"),
                     incident("old-active", kNow - 7200 * kSecond, "ta", "tool", true),
                     incident("new", kNow - 60 * kSecond, "ta", "retrieval")});
  j.prune(kNow);
  auto rows = all(j);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "new");
  EXPECT_EQ(rows[1].key, "old-active");  // under way: kept
}

TEST(JournalIncidents, StaleActiveRowsAreClosedByTheNextWriter) {
  testing::TempDir dir;
  Journal j(dir.file("j.db"), JournalLimits{});
  j.write_incidents({incident("a", kNow, "ta", "retrieval", true),
                     incident("b", kNow, "tb", "retrieval", false)});
  EXPECT_EQ(j.close_stale_incidents(), 1);
  for (const auto& r : all(j)) EXPECT_FALSE(r.active) << r.key;
  EXPECT_EQ(j.close_stale_incidents(), 0);
}

TEST(IncidentListing, TableAndJson) {
  EXPECT_EQ(render_incident_table({}, "for tenant ta"), "no incidents for tenant ta\n");
  IncidentRow a = incident("k1", kNow, "ta", "retrieval,generation");
  IncidentRow b = incident("k2", kNow - 100 * kSecond, "tb", "tool", true);
  const std::string table = render_incident_table({a, b}, "in the last 1h");
  EXPECT_EQ(table.rfind("2 incidents in the last 1h, newest first\n", 0), 0u) << table;
  EXPECT_NE(table.find("START"), std::string::npos);
  EXPECT_NE(table.find("20 s"), std::string::npos) << table;  // how long it lasted
  EXPECT_NE(table.find("ongoing"), std::string::npos) << table;
  EXPECT_NE(table.find("retrieval,generation"), std::string::npos);
  EXPECT_NE(table.find("4.8x"), std::string::npos);
  EXPECT_NE(table.find("12.5x"), std::string::npos);
  EXPECT_NE(table.find("    retrieval 4.8x its 3.1 ms baseline\n"), std::string::npos);

  const auto j = incident_rows_json({a});
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["tenant"], "ta");
  EXPECT_EQ(j[0]["stages"], nlohmann::json::array({"retrieval", "generation"}));
  EXPECT_EQ(j[0]["start_ns"], kNow);
  EXPECT_EQ(j[0]["end_ns"], kNow + 20 * kSecond);
  EXPECT_EQ(j[0]["active"], false);
  EXPECT_EQ(j[0]["cause"], "block_io");
  EXPECT_EQ(j[0]["slowed"], 84);
  EXPECT_DOUBLE_EQ(j[0]["median_ratio"].get<double>(), 4.8);
  EXPECT_DOUBLE_EQ(j[0]["baseline_seconds"].get<double>(), 0.0031);
  EXPECT_TRUE(j[0]["start"].is_string());
}

}  // namespace
}  // namespace tailcause::exporter
