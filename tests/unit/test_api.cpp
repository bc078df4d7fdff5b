// SPDX-License-Identifier: Apache-2.0
// The JSON API: parameter validation (hostile names, huge ranges, injection strings, repeats:
// 400 with a JSON error and nothing else changed), each endpoint over a history fed real
// scrapes, and the routes through the real HTTP server (query strings reach the API, the page
// is served with its policy).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "export/api/api.h"
#include "export/http_server.h"
#include "export/journal.h"
#include "temp_dir.h"

namespace tailcause::exporter::api {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;  // a Unix time on a 2 s tick

TEST(ApiParams, AcceptsKnownNamesAndBoundedValues) {
  const Params p = Params::parse("tenant=ta&since=300&stage=gen%2Deration&min_s=0.25",
                                 {"tenant", "since", "stage", "min_s"});
  EXPECT_EQ(p.name("tenant"), "ta");
  EXPECT_EQ(p.name("stage"), "gen-eration");
  EXPECT_EQ(p.integer("since", 1, 900, 5), 300);
  EXPECT_EQ(p.integer("step", 1, 900, 5), 5);
  EXPECT_DOUBLE_EQ(*p.number("min_s", 0, 10), 0.25);
  EXPECT_FALSE(p.name("absent"));
}

TEST(ApiParams, HostileParametersAreBadRequests) {
  const auto bad = [](std::string_view query) {
    try {
      const Params p = Params::parse(query, {"tenant", "since", "min_s"});
      p.name("tenant");
      p.integer("since", 1, 900, 5);
      p.number("min_s", 0, 10);
    } catch (const BadRequest& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(bad("frobnicate=1"), "");
  EXPECT_NE(bad("tenant=a&tenant=b"), "");                        // given twice
  EXPECT_NE(bad("tenant=%27%3B%20DROP%20TABLE%20glitches"), "");  // '; DROP TABLE glitches
  EXPECT_NE(bad("tenant=%3Cscript%3Ealert(1)%3C/script%3E"), "");
  EXPECT_NE(bad("tenant=a%00b"), "");
  EXPECT_NE(bad("tenant=" + std::string(300, 'a')), "");
  EXPECT_NE(bad("tenant="), "");
  EXPECT_NE(bad("since=99999999999999999999999"), "");
  EXPECT_NE(bad("since=-1"), "");
  EXPECT_NE(bad("since=1e3"), "");
  EXPECT_NE(bad("since=901"), "");
  EXPECT_NE(bad("since=0x10"), "");
  EXPECT_NE(bad("min_s=nan"), "");
  EXPECT_NE(bad("min_s=inf"), "");
  EXPECT_NE(bad("min_s=11"), "");
  std::string many;
  for (int i = 0; i < 20; ++i) many += "tenant=a&";
  EXPECT_NE(bad(many), "");
  EXPECT_EQ(bad("tenant=ta&since=900&min_s=10"), "");
  // The message never echoes markup back.
  EXPECT_EQ(bad("tenant=%3Cb%3E").find('<'), std::string::npos);
}

// Scrapes as the daemon's families fill them: tenant ta's generation with its components, a
// glitch counter, a cache, a throttled cgroup, a neighbour, a breaker, a TCP pair, a layer.
core::MetricSet scrape(uint64_t n) {
  namespace m = core::metric;
  core::MetricSet s;
  core::HistogramData h;
  h.buckets = {{0.001, 0}, {0.01, n}, {0.1, n}, {1, 2 * n}};
  h.count = 2 * n;
  h.sum = 0.505 * static_cast<double>(n);
  s.add_histogram(m::kStageDurationSeconds, "",
                  {{"tenant", "ta"}, {"agent", "rag"}, {"stage", "generation"}}, h);
  s.add(
      m::kStageTimeSeconds, core::MetricType::Counter, "",
      {{"tenant", "ta"}, {"agent", "rag"}, {"stage", "generation"}, {"component", "cpu_throttled"}},
      0.4 * static_cast<double>(n));
  s.add(m::kStageTimeSeconds, core::MetricType::Counter, "",
        {{"tenant", "ta"}, {"agent", "rag"}, {"stage", "generation"}, {"component", "on_cpu"}},
        0.1 * static_cast<double>(n));
  s.add(m::kGlitches, core::MetricType::Counter, "",
        {{"tenant", "ta"}, {"stage", "generation"}, {"cause", "cpu_throttled"}},
        static_cast<double>(n));
  for (const char* r : {"hit", "miss", "stale"})
    s.add(m::kCacheLookups, core::MetricType::Counter, "",
          {{"tenant", "ta"}, {"cache", "vec"}, {"result", r}}, static_cast<double>(n));
  s.add(m::kCacheBreakdownRatio, core::MetricType::Gauge, "", {{"tenant", "ta"}, {"cache", "vec"}},
        0.66);
  s.add(m::kCacheCompetition, core::MetricType::Gauge, "", {{"tenant", "ta"}, {"cache", "vec"}},
        0.75);
  s.add(m::kCacheQuotaBytes, core::MetricType::Gauge, "", {{"tenant", "ta"}, {"cache", "vec"}},
        65536);
  s.add(m::kCacheStaleAgeSeconds, core::MetricType::Gauge, "",
        {{"tenant", "ta"}, {"cache", "vec"}, {"quantile", "0.99"}}, 42);
  s.add(m::kCpuThrottledSeconds, core::MetricType::Counter, "", {{"cgroup", "/a/ta"}}, 0.5 * n);
  s.add(m::kCpuThrottledPeriods, core::MetricType::Counter, "", {{"cgroup", "/a/ta"}}, 10.0 * n);
  s.add(m::kCpuPeriods, core::MetricType::Counter, "", {{"cgroup", "/a/ta"}}, 10.0 * n);
  s.add(m::kCpuQuotaSeconds, core::MetricType::Gauge, "", {{"cgroup", "/a/ta"}}, 0.01);
  s.add(m::kCpuPeriodSeconds, core::MetricType::Gauge, "", {{"cgroup", "/a/ta"}}, 0.1);
  s.add(m::kCgroupPreemptedSeconds, core::MetricType::Counter, "",
        {{"cgroup", "/a/ta"}, {"by_cgroup", "/hog"}}, 0.25 * n);
  s.add(m::kCircuitBreakerOpen, core::MetricType::Gauge, "", {{"tenant", "ta"}, {"agent", "rag"}},
        1);
  s.add_histogram(m::kTcpRttSeconds, "", {{"local", "127.0.0.1:*"}, {"remote", "127.0.0.1:8080"}},
                  h);
  s.add_histogram(m::kLayerDurationSeconds, "", {{"layer", "3"}, {"batch_size", "8"}}, h);
  return s;
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint64_t i = 0; i <= 10; ++i)
      api.sample(scrape(i * 10), kT0 + static_cast<int64_t>(i) * 2 * kS);
    for (int64_t t = kT0; t < now; t += kS / 4)
      stages->add("ta", "generation", t, t % (2 * kS) ? 5'000'000 : 600'000'000);
    api.set_stage_heatmap(stages);
  }
  nlohmann::json get(const std::string& target, unsigned want = 200) {
    const size_t q = target.find('?');
    const Reply r =
        api.handle(target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), now);
    EXPECT_EQ(r.status, want) << target << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return nlohmann::json::parse(r.body);
  }
  Api api{[](core::MetricSet&) {}, ApiSettings{}};
  std::shared_ptr<core::StageHeatmap> stages = std::make_shared<core::StageHeatmap>();
  int64_t now = kT0 + 20 * kS;
};

TEST_F(ApiTest, StagesGivePercentilesComponentsAndGlitchesOverTime) {
  const auto j = get("/stages?since=60&step=10");
  ASSERT_EQ(j["series"].size(), 1u);
  const auto& s = j["series"][0];
  EXPECT_EQ(s["tenant"], "ta");
  EXPECT_EQ(s["stage"], "generation");
  EXPECT_EQ(s["count"], 200);  // 2 per n, n went 0 -> 100
  EXPECT_EQ(s["largest_component"], "cpu_throttled");
  EXPECT_DOUBLE_EQ(s["glitches"].get<double>(), 100);
  EXPECT_GT(s["p99_s"].get<double>(), 0.1);
  EXPECT_LE(s["p99_s"].get<double>(), 1.0);
  EXPECT_LE(s["p50_s"].get<double>(), 0.0101);
  EXPECT_EQ(s["points"].size(), 2u);  // ticks in (now-20, now-10] and (now-10, now]
  EXPECT_EQ(get("/stages?tenant=tb")["series"].size(), 0u);
}

// Many clients polling one view cost one answer a tick: the answer is kept (its "now" too)
// for the rest of the tick, and a new sample replaces it.
TEST_F(ApiTest, AnAnswerIsKeptUntilTheNextSample) {
  const auto first = get("/stages?since=60&step=10");
  now += kS;  // the same 2 s tick
  const auto kept = get("/stages?since=60&step=10");
  EXPECT_EQ(kept, first);
  EXPECT_EQ(kept["now"], (now - kS) / kS);
  api.sample(scrape(200), now);
  const auto next = get("/stages?since=60&step=10");
  EXPECT_EQ(next["now"], now / kS);
  EXPECT_EQ(next["series"][0]["count"], 400);  // the new sample counted
  now += 2 * kS;                               // the next tick, no sample: answered anew
  EXPECT_EQ(get("/stages?since=60&step=10")["now"], now / kS);
}

TEST_F(ApiTest, IndexSaysTheHistoryWindow) {
  const auto j = get("/");
  EXPECT_EQ(j["tick_s"], 2);
  EXPECT_EQ(j["history_s"], 900);
  api.configure(
      {.journal_path = "", .cache_breakdown_ratio = 0.5, .tick_ns = 5 * kS, .slots = 720});
  EXPECT_EQ(get("/")["history_s"], 3600);
}

TEST_F(ApiTest, HeatmapsHaveCells) {
  const auto hm = get("/heatmap/stage?stage=generation&since=60&step=2");
  EXPECT_EQ(hm["bounds"], core::duration_bounds());
  ASSERT_EQ(hm["x"].size(), 30u);
  EXPECT_EQ(hm["x"].back(), now / kS + 2) << "the current second is in the last column";
  for (const auto& x : hm["x"])
    EXPECT_EQ(x.get<int64_t>() % 2, 0) << "columns on multiples of step";
  // Stages every 250 ms from kT0 to now: 8 per 2 s column, one of them 600 ms.
  uint64_t slow = 0, fast = 0;
  for (const auto& c : hm["cells"]) {
    (c[1] == core::duration_bucket(600'000'000) ? slow : fast) += c[2].get<uint64_t>();
    EXPECT_EQ(c[1] == core::duration_bucket(600'000'000) ? 1 : 7, c[2]) << c;
  }
  EXPECT_EQ(slow, 10u);
  EXPECT_EQ(fast, 70u);
  EXPECT_EQ(hm["max"], 7);
  EXPECT_TRUE(get("/heatmap/stage?stage=generation&tenant=tb")["cells"].empty());
  get("/heatmap/stage", 400);                                     // stage is required
  get("/heatmap/stage?stage=generation&since=3600&step=1", 400);  // too many columns
  Api bare{[](core::MetricSet&) {}, ApiSettings{}};
  EXPECT_EQ(bare.handle("/heatmap/stage", "stage=generation", now).status, 503u);
  const auto tcp = get("/heatmap/tcp");
  ASSERT_EQ(tcp["pairs"].size(), 1u);
  EXPECT_EQ(tcp["pairs"][0]["remote"], "127.0.0.1:8080");
  EXPECT_EQ(tcp["cells"].size(), 1u);
  const auto layers = get("/heatmap/layers");
  EXPECT_EQ(layers["layers"], nlohmann::json::array({"3"}));
  EXPECT_EQ(layers["batch_sizes"], nlohmann::json::array({"8"}));
  EXPECT_EQ(layers["cells"].size(), 1u);
}

TEST_F(ApiTest, CachesAndContention) {
  const auto c = get("/caches?since=60");
  ASSERT_EQ(c["caches"].size(), 1u);
  EXPECT_DOUBLE_EQ(c["caches"][0]["miss"].get<double>(), 100);
  EXPECT_EQ(c["caches"][0]["state"], "breakdown");
  EXPECT_DOUBLE_EQ(c["caches"][0]["stale_age_p99_s"].get<double>(), 42);
  EXPECT_DOUBLE_EQ(c["caches"][0]["competition"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(c["caches"][0]["quota_bytes"].get<double>(), 65536);
  const auto k = get("/contention?since=60");
  ASSERT_EQ(k["throttling"].size(), 1u);
  EXPECT_NEAR(k["throttling"][0]["quota_cpus"].get<double>(), 0.1, 1e-9);
  ASSERT_EQ(k["neighbours"].size(), 1u);
  EXPECT_EQ(k["neighbours"][0]["by_cgroup"], "/hog");
  ASSERT_EQ(k["breakers"].size(), 1u);
  EXPECT_TRUE(k["breakers"][0]["open"].get<bool>());
}

TEST_F(ApiTest, BadParametersAre400AndChangeNothing) {
  const std::string before = api.handle("/stages", "since=60&step=10", now).body;
  for (const char* q : {"since=86401", "since=900&step=1", "step=0", "tenant=a&tenant=b",
                        "tenant=%27%20OR%201%3D1--", "x=1", "since=18446744073709551616",
                        "tenant=..%2F..%2Fetc%2Fpasswd%00"}) {
    const Reply r = api.handle("/stages", q, now);
    EXPECT_EQ(r.status, 400u) << q;
    EXPECT_TRUE(nlohmann::json::parse(r.body).contains("error")) << q;
  }
  EXPECT_EQ(get("/glitches?limit=100000", 400).count("error"), 1u);
  EXPECT_EQ(get("/glitches?from=10&to=5", 400).count("error"), 1u);
  EXPECT_EQ(get("/heatmap/tcp?metric=bogus", 400).count("error"), 1u);
  EXPECT_EQ(get("/nope", 404).count("error"), 1u);
  EXPECT_EQ(api.handle("/stages", "since=60&step=10", now).body, before);
}

TEST_F(ApiTest, GlitchesComeFromTheJournalFiltered) {
  tailcause::testing::TempDir dir;
  const std::string path = dir.file("journal.db");
  {
    Journal j(path, {});
    GlitchRow a;
    a.time_ns = now - 5 * kS;
    a.tenant = "ta";
    a.stage = "generation";
    a.wall_seconds = 0.6;
    a.cause = "cpu_throttled";
    a.verdict = "generation 600 ms, 80% cpu_throttled";
    a.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    GlitchRow b = a;
    b.time_ns = now - 3 * kS;
    b.tenant = "tb";
    b.wall_seconds = 0.02;
    b.trace_id = "00000000000000000000000000000001";
    j.append({a, b});
  }
  EXPECT_TRUE(get("/glitches")["glitches"].empty());  // no journal configured
  api.configure({.journal_path = path});
  const auto all = get("/glitches");
  ASSERT_EQ(all["glitches"].size(), 2u);
  EXPECT_EQ(all["glitches"][0]["tenant"], "tb");  // newest first
  EXPECT_EQ(get("/glitches?tenant=ta")["glitches"].size(), 1u);
  EXPECT_EQ(get("/glitches?min_s=0.5")["glitches"].size(), 1u);
  EXPECT_EQ(get("/glitches?trace_id=4bf92f3577b34da6a3ce929d0e0e4736")["glitches"].size(), 1u);
  const int64_t now_s = now / kS;
  EXPECT_EQ(get("/glitches?from=" + std::to_string(now_s - 6) +
                "&to=" + std::to_string(now_s - 4))["glitches"]
                .size(),
            1u);
  EXPECT_EQ(get("/glitches?limit=1")["glitches"].size(), 1u);
}

// A heatmap cell's click asks /glitches for the cell's seconds [x - step, x) and wall times
// [lo, hi), as the page does: it lists exactly the glitches counted in the cell, at the edges
// too (a nanosecond either side of a second, a wall time on a bucket's bound or under it).
TEST_F(ApiTest, AHeatmapCellListsExactlyItsGlitches) {
  tailcause::testing::TempDir dir;
  const std::string path = dir.file("journal.db");
  auto cells = std::make_shared<core::StageHeatmap>();
  std::vector<GlitchRow> rows;
  const int64_t s0 = now - 10 * kS;
  for (int64_t at : {s0 - 1, s0, s0 + kS - 1, s0 + kS, s0 + 2 * kS - 1, s0 + 5 * kS})
    for (uint64_t wall : {(1ull << 28) - 1, 1ull << 28, (1ull << 29) - 1, 1ull << 29}) {
      cells->add("ta", "generation", at, wall);
      GlitchRow r;
      r.time_ns = at;
      r.tenant = "ta";
      r.stage = "generation";
      r.wall_seconds = static_cast<double>(wall) * 1e-9;  // as the pipeline writes it
      r.cause = "cpu_throttled";
      rows.push_back(r);
    }
  Journal(path, {}).append(rows);
  api.configure({.journal_path = path});
  api.set_stage_heatmap(cells);

  for (int64_t step : {1, 2, 3}) {
    const auto hm = get("/heatmap/stage?stage=generation&since=30&step=" + std::to_string(step));
    const auto& bounds = hm["bounds"];
    uint64_t total = 0;
    for (const auto& c : hm["cells"]) {
      const int64_t to = hm["x"][c[0].get<size_t>()], from = to - step;
      const size_t b = c[1];
      const std::string lo = b ? bounds[b - 1].dump() : "0";
      const std::string hi = b < bounds.size() ? bounds[b].dump() : "1e6";
      const auto listed = get("/glitches?stage=generation&from=" + std::to_string(from) +
                              "&to=" + std::to_string(to) + "&min_s=" + lo + "&max_s=" + hi +
                              "&limit=500")["glitches"];
      EXPECT_EQ(listed.size(), c[2].get<size_t>()) << "step " << step << " cell " << c;
      total += c[2].get<uint64_t>();
    }
    EXPECT_EQ(total, rows.size()) << "step " << step;
  }
}

// The routes through the real server: the query string reaches the API, hostile ones are 400
// and the endpoint keeps serving; the page comes with its content policy.
int connect_local(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  return fd;
}

std::string fetch(int port, const std::string& target) {
  const int fd = connect_local(port);
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(ApiOverHttp, QueryStringsReachTheApiAndHostileOnesAre400) {
  HttpServer server([](core::MetricSet& s) { s = scrape(1); });
  server.bind({"127.0.0.1", 0});
  server.start();
  const int port = server.port();
  EXPECT_NE(fetch(port, "/api/v1/").find("\"endpoints\""), std::string::npos);
  EXPECT_EQ(fetch(port, "/api/v1/stages?since=60").rfind("HTTP/1.1 200", 0), 0u);
  for (const char* q : {"/api/v1/stages?since=60&since=61", "/api/v1/stages?tenant=%3Cscript%3E",
                        "/api/v1/stages?since=999999999999", "/api/v1/glitches?tenant=a%27--"}) {
    const std::string r = fetch(port, q);
    EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << q << ": " << r.substr(0, 200);
    EXPECT_NE(r.find("application/json"), std::string::npos);
  }
  EXPECT_EQ(fetch(port, "/api/v2/stages").rfind("HTTP/1.1 404", 0), 0u);
  const std::string page = fetch(port, "/");
  EXPECT_EQ(page.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_NE(page.find("Content-Security-Policy: default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("id=\"heatmap\""), std::string::npos);
  EXPECT_NE(fetch(port, "/metrics").find("tailcause_stage_duration_seconds"), std::string::npos);
}

}  // namespace
}  // namespace tailcause::exporter::api
