// SPDX-License-Identifier: Apache-2.0
// Rendering of the Prometheus text format 0.0.4 and OpenMetrics 1.0, checked line by line and
// then by Prometheus' own tools: `promtool check metrics` lints the text format, and
// `promtool tsdb create-blocks-from openmetrics` runs Prometheus' OpenMetrics parser.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "export/exposition.h"

using namespace tailcause;
using core::HistogramData;
using core::MetricSet;
using core::MetricType;
using exporter::Format;
using exporter::negotiate;
using exporter::render;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  const auto ls = lines_of(text);
  return std::find(ls.begin(), ls.end(), line) != ls.end();
}

HistogramData latency_histogram() {
  HistogramData h;
  h.buckets = {{0.001, 1}, {0.01, 4}, {0.1, 9}};
  h.count = 12;
  h.sum = 0.75;
  return h;
}

// ---- promtool -------------------------------------------------------------------------

std::string find_promtool() {
  std::istringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/promtool";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct CommandResult {  // exit status, and stdout with stderr
  int status = -1;
  std::string output;
};

CommandResult run_shell(const std::string& command) {
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  if (!p) return r;
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A temporary directory, removed with everything in it.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    char tmpl[] = "/tmp/tailcause-exposition-XXXXXX";
    if (mkdtemp(tmpl)) path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

// promtool is installed by the project's install script (Debian's prometheus package); a
// missing promtool is a broken test environment and must fail, not skip.
#define REQUIRE_PROMTOOL(var)                                                               \
  const std::string var = find_promtool();                                                  \
  ASSERT_FALSE(var.empty()) << "promtool not found in PATH: install Debian's 'prometheus' " \
                               "package (scripts/install-deps.sh) to run the exposition tests"

// `promtool check metrics` reads the text format on stdin; exit 0 and silence mean no lint.
CommandResult promtool_lint(const std::string& promtool, const std::string& text) {
  ScratchDir dir;
  return run_shell(promtool + " check metrics < " + dir.write("metrics.prom", text));
}

// The backfill importer needs a timestamp on each sample; it goes right after the value (and
// so before an exemplar). Label values may hold spaces, '#' and escaped quotes.
std::string with_timestamps(const std::string& om) {
  std::string out;
  for (const auto& l : lines_of(om)) {
    if (l.empty() || l[0] == '#') {
      out += l + "\n";
      continue;
    }
    size_t i = l.find_first_of("{ ");
    if (i != std::string::npos && l[i] == '{') {
      bool quoted = false;
      for (; i < l.size(); ++i) {
        if (quoted && l[i] == '\\') {
          ++i;
        } else if (l[i] == '"') {
          quoted = !quoted;
        } else if (!quoted && l[i] == '}') {
          ++i;
          break;
        }
      }
    }
    const size_t value_end = l.find(' ', i + 1);  // l[i] is the space before the value
    const size_t at = value_end == std::string::npos ? l.size() : value_end;
    out += l.substr(0, at) + " 1700000000" + l.substr(at) + "\n";
  }
  return out;
}

// Prometheus' OpenMetrics parser, through promtool's backfill: rejects a missing # EOF, a UNIT
// that is not a suffix, exemplars where they are not allowed, invalid UTF-8, bad escapes.
CommandResult promtool_parse_openmetrics(const std::string& promtool, const std::string& om) {
  ScratchDir dir;
  const auto file = dir.write("metrics.om", with_timestamps(om));
  return run_shell(promtool + " tsdb create-blocks-from openmetrics -q " + file + " " +
                   (dir.path / "blocks").string());
}

// ---- a realistic scrape ---------------------------------------------------------------

MetricSet realistic_set() {
  MetricSet set;
  const std::vector<std::string> cgroups = {"/system.slice/docker-4f1c.scope",
                                            "/kubepods/burstable/pod\"quoted\"",
                                            "/tenants/back\\slash",
                                            "/tenants/new\nline",
                                            "/tenants/ünïcødé ✓",
                                            "/tenants/latin1-caf\xe9",
                                            "__other__"};
  for (size_t i = 0; i < cgroups.size(); ++i) {
    const double v = static_cast<double>(i);
    set.add("tailcause_cpu_throttled_seconds", MetricType::Counter,
            "Time the cgroup's tasks were throttled by the CPU quota.", {{"cgroup", cgroups[i]}},
            0.25 * v, "seconds");
    set.add("tailcause_cpu_throttled_periods", MetricType::Counter,
            "CFS periods in which the cgroup was throttled.", {{"cgroup", cgroups[i]}}, 3 * v);
    set.add("tailcause_page_cache_misses", MetricType::Counter,
            "Page-cache misses that went to the block layer.", {{"cgroup", cgroups[i]}}, 7 * v);
    set.add_histogram("tailcause_runqueue_latency_seconds", "Time runnable tasks waited for a CPU.",
                      {{"cgroup", cgroups[i]}}, latency_histogram());
  }
  set.add("tailcause_read_bytes", MetricType::Counter, "Bytes read from \"block\" devices.",
          {{"device", "nvme0n1"}, {"op", "read"}}, 1.5e9, "bytes");
  set.add("tailcause_rss_bytes", MetricType::Gauge, "Resident memory of the daemon.", {},
          48 * 1024 * 1024, "bytes");
  set.add("tailcause_probe_attached", MetricType::Gauge,
          "1 when the probe family is attached, 0 when it failed (see logs).\nSecond line.",
          {{"probe", "sched"}}, 1);
  set.add("tailcause_probe_attached", MetricType::Gauge, "", {{"probe", "tcp"}}, 0);
  // A linear, unit-less histogram (run-queue length) with tiny and huge bounds.
  HistogramData runq;
  runq.buckets = {{0, 5}, {1, 8}, {2, 9}, {1e21, 10}};
  runq.count = 11;
  runq.sum = 14;
  // Added with add_histogram's default unit ("seconds") although the name has none.
  set.add_histogram("tailcause_runqueue_length", "Runnable tasks per CPU, sampled.", {{"cpu", "0"}},
                    runq);
  set.add("tailcause_events_lost", MetricType::Counter, "Events dropped.", {{"source", "sched"}},
          0);
  set.family("tailcause_unused_family", MetricType::Gauge, "Never filled.");
  return set;
}

}  // namespace

TEST(Exposition, TextCounterFamilyIsNamedWithTotal) {
  MetricSet set;
  set.add("tailcause_requests", MetricType::Counter, "Requests served.", {{"tenant", "a"}}, 3);
  EXPECT_EQ(render(set, Format::PrometheusText),
            "# HELP tailcause_requests_total Requests served.\n"
            "# TYPE tailcause_requests_total counter\n"
            "tailcause_requests_total{tenant=\"a\"} 3\n");
}

TEST(Exposition, OpenMetricsCounterFamilyWithoutTotalAndSampleWithTotal) {
  MetricSet set;
  set.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "Throttled time.",
          {{"cgroup", "/a"}}, 1.5, "seconds");
  EXPECT_EQ(render(set, Format::OpenMetrics),
            "# HELP tailcause_cpu_throttled_seconds Throttled time.\n"
            "# TYPE tailcause_cpu_throttled_seconds counter\n"
            "# UNIT tailcause_cpu_throttled_seconds seconds\n"
            "tailcause_cpu_throttled_seconds_total{cgroup=\"/a\"} 1.5\n"
            "# EOF\n");
  // The text format has no UNIT line.
  EXPECT_EQ(render(set, Format::PrometheusText).find("# UNIT"), std::string::npos);
}

TEST(Exposition, UnitLineOnlyWhenTheNameEndsWithTheUnit) {
  // Prometheus rejects the whole scrape when UNIT is not a suffix of the family name; a
  // histogram added with the default unit but a unit-less name must not produce one.
  MetricSet set;
  set.add_histogram("tailcause_runqueue_length", "Runnable tasks.", {}, latency_histogram());
  set.add("tailcause_rss_bytes", MetricType::Gauge, "RSS.", {}, 1, "bytes");
  set.add("tailcause_bytes_total_weird", MetricType::Gauge, "Unit not at the end.", {}, 1, "bytes");
  const std::string om = render(set, Format::OpenMetrics);
  EXPECT_EQ(om.find("# UNIT tailcause_runqueue_length"), std::string::npos) << om;
  EXPECT_EQ(om.find("# UNIT tailcause_bytes_total_weird"), std::string::npos) << om;
  EXPECT_TRUE(has_line(om, "# UNIT tailcause_rss_bytes bytes")) << om;
}

TEST(Exposition, GaugesKeepTheirNameAndRenderSpecialValues) {
  MetricSet set;
  set.add("tailcause_probe_attached", MetricType::Gauge, "Attached.", {{"probe", "sched"}}, 1);
  set.add("tailcause_probe_attached", MetricType::Gauge, "Attached.", {{"probe", "tcp"}}, 0);
  set.add("tailcause_ratio", MetricType::Gauge, "Ratio.", {}, 0.1);
  set.add("tailcause_nan", MetricType::Gauge, "NaN.", {}, std::nan(""));
  set.add("tailcause_inf", MetricType::Gauge, "Inf.", {}, -INFINITY);
  for (Format f : {Format::PrometheusText, Format::OpenMetrics}) {
    const std::string out = render(set, f);
    EXPECT_TRUE(has_line(out, "# TYPE tailcause_probe_attached gauge")) << out;
    EXPECT_TRUE(has_line(out, "tailcause_probe_attached{probe=\"sched\"} 1")) << out;
    EXPECT_TRUE(has_line(out, "tailcause_probe_attached{probe=\"tcp\"} 0")) << out;
    EXPECT_TRUE(has_line(out, "tailcause_ratio 0.1")) << out;
    EXPECT_TRUE(has_line(out, "tailcause_nan NaN")) << out;
    EXPECT_TRUE(has_line(out, "tailcause_inf -Inf")) << out;
    EXPECT_EQ(out.find("_total"), std::string::npos) << out;
  }
}

TEST(Exposition, HistogramBucketsAscendWithInfEqualToCount) {
  MetricSet set;
  set.add_histogram("tailcause_runqueue_latency_seconds", "Run-queue wait.", {{"cgroup", "/a"}},
                    latency_histogram());
  const std::string expected_samples =
      "tailcause_runqueue_latency_seconds_bucket{cgroup=\"/a\",le=\"0.001\"} 1\n"
      "tailcause_runqueue_latency_seconds_bucket{cgroup=\"/a\",le=\"0.01\"} 4\n"
      "tailcause_runqueue_latency_seconds_bucket{cgroup=\"/a\",le=\"0.1\"} 9\n"
      "tailcause_runqueue_latency_seconds_bucket{cgroup=\"/a\",le=\"+Inf\"} 12\n"
      "tailcause_runqueue_latency_seconds_sum{cgroup=\"/a\"} 0.75\n"
      "tailcause_runqueue_latency_seconds_count{cgroup=\"/a\"} 12\n";
  EXPECT_EQ(render(set, Format::PrometheusText),
            "# HELP tailcause_runqueue_latency_seconds Run-queue wait.\n"
            "# TYPE tailcause_runqueue_latency_seconds histogram\n" +
                expected_samples);
  EXPECT_EQ(render(set, Format::OpenMetrics),
            "# HELP tailcause_runqueue_latency_seconds Run-queue wait.\n"
            "# TYPE tailcause_runqueue_latency_seconds histogram\n"
            "# UNIT tailcause_runqueue_latency_seconds seconds\n" +
                expected_samples + "# EOF\n");
}

TEST(Exposition, BucketBoundsRoundTripExactly) {
  // Whatever the notation, each `le` must parse back to the exact double bound.
  const std::vector<double> bounds = {1024e-9, 2048e-9, 1e-7, 0.1, 0.3, 1, 2.5, 1e21, 123456789};
  HistogramData h;
  for (size_t i = 0; i < bounds.size(); ++i) h.buckets.push_back({bounds[i], i});
  h.count = bounds.size();
  MetricSet set;
  set.add_histogram("x_seconds", "x", {}, h);
  size_t seen = 0;
  for (const auto& l : lines_of(render(set, Format::PrometheusText))) {
    const auto at = l.find("le=\"");
    if (at == std::string::npos || l.find("+Inf") != std::string::npos) continue;
    const auto start = at + 4;
    const std::string le = l.substr(start, l.find('"', start) - start);
    ASSERT_LT(seen, bounds.size());
    EXPECT_EQ(std::strtod(le.c_str(), nullptr), bounds[seen]) << le;
    ++seen;
  }
  EXPECT_EQ(seen, bounds.size());
}

TEST(Exposition, LabelValuesEscapeBackslashQuoteAndNewline) {
  MetricSet set;
  set.add("x", MetricType::Gauge, "x", {{"cgroup", "a\\b\"c\nd"}}, 1);
  for (Format f : {Format::PrometheusText, Format::OpenMetrics}) {
    EXPECT_TRUE(has_line(render(set, f), R"(x{cgroup="a\\b\"c\nd"} 1)")) << render(set, f);
  }
}

TEST(Exposition, HelpEscapingFollowsEachFormat) {
  MetricSet set;
  set.add("x", MetricType::Gauge, "back\\slash \"quoted\"\nsecond line", {}, 1);
  // Text 0.0.4 escapes backslash and newline in HELP; OpenMetrics also escapes the quote.
  EXPECT_TRUE(has_line(render(set, Format::PrometheusText),
                       R"(# HELP x back\\slash "quoted"\nsecond line)"));
  EXPECT_TRUE(has_line(render(set, Format::OpenMetrics),
                       R"(# HELP x back\\slash \"quoted\"\nsecond line)"));
}

TEST(Exposition, InvalidUtf8IsReplacedSoTheScrapeStaysValid) {
  // Cgroup names are arbitrary bytes; Prometheus rejects a whole scrape with invalid UTF-8.
  MetricSet set;
  set.add("x", MetricType::Gauge, "help \xff",
          {{"cgroup", "/bad\xc3(\xed\xa0\x80\xf4\x90\x80\x80/ok✓"}}, 1);
  for (Format f : {Format::PrometheusText, Format::OpenMetrics}) {
    const std::string out = render(set, f);
    EXPECT_TRUE(has_line(out,
                         "x{cgroup=\"/bad\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                         "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD/ok✓\"} 1"))
        << out;
    EXPECT_TRUE(has_line(out, "# HELP x help \xEF\xBF\xBD")) << out;
  }
}

TEST(Exposition, ExemplarsOnlyInOpenMetrics) {
  MetricSet set;
  HistogramData h;
  h.buckets = {{0.1, 3}, {1, 5}};
  h.count = 6;
  h.sum = 2.5;
  h.exemplars.resize(3);
  h.exemplars[0] = core::Exemplar{{{"trace_id", "abc"}}, 0.05, 1700000000.0};
  h.exemplars[2] = core::Exemplar{{{"trace_id", "d\"e"}}, 7, std::nullopt};
  set.add_histogram("x", "x", {}, h, "");
  set.add("c", MetricType::Counter, "c", {{"tenant", "t"}}, 4);
  set.families().back().samples.back().exemplar = core::Exemplar{{{"trace_id", "f"}}, 1, 1.5};

  const std::string om = render(set, Format::OpenMetrics);
  EXPECT_TRUE(has_line(om, R"(x_bucket{le="0.1"} 3 # {trace_id="abc"} 0.05 1700000000.000)")) << om;
  EXPECT_TRUE(has_line(om, R"(x_bucket{le="1"} 5)")) << om;
  EXPECT_TRUE(has_line(om, R"(x_bucket{le="+Inf"} 6 # {trace_id="d\"e"} 7)")) << om;
  EXPECT_TRUE(has_line(om, R"(x_sum 2.5)")) << om;
  EXPECT_TRUE(has_line(om, R"(c_total{tenant="t"} 4 # {trace_id="f"} 1 1.500)")) << om;

  const std::string text = render(set, Format::PrometheusText);
  EXPECT_EQ(text.find("trace_id"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, R"(x_bucket{le="0.1"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(c_total{tenant="t"} 4)")) << text;
}

TEST(Exposition, GaugeExemplarsAreNeverRendered) {
  // OpenMetrics allows exemplars on counters and buckets only.
  MetricSet set;
  set.add("g", MetricType::Gauge, "g", {}, 2);
  set.families().back().samples.back().exemplar = core::Exemplar{{{"trace_id", "x"}}, 1, {}};
  EXPECT_EQ(render(set, Format::OpenMetrics), "# HELP g g\n# TYPE g gauge\ng 2\n# EOF\n");
}

TEST(Exposition, FamiliesWithoutSamplesAreOmitted) {
  MetricSet set;
  set.family("empty_counter", MetricType::Counter, "nothing yet");
  set.family("empty_histogram", MetricType::Histogram, "nothing yet", "seconds");
  EXPECT_EQ(render(set, Format::PrometheusText), "");
  EXPECT_EQ(render(set, Format::OpenMetrics), "# EOF\n");
  set.add("present", MetricType::Gauge, "here", {}, 1);
  const std::string om = render(set, Format::OpenMetrics);
  EXPECT_EQ(om.find("empty_"), std::string::npos) << om;
  EXPECT_EQ(om, "# HELP present here\n# TYPE present gauge\npresent 1\n# EOF\n");
}

TEST(Exposition, OpenMetricsEndsWithExactlyOneEof) {
  const std::string om = render(realistic_set(), Format::OpenMetrics);
  const auto ls = lines_of(om);
  ASSERT_FALSE(ls.empty());
  EXPECT_EQ(ls.back(), "# EOF");
  EXPECT_EQ(std::count(ls.begin(), ls.end(), "# EOF"), 1);
  EXPECT_EQ(om.back(), '\n');
  EXPECT_EQ(render(realistic_set(), Format::PrometheusText).find("# EOF"), std::string::npos);
}

// ---- content negotiation --------------------------------------------------------------

TEST(Exposition, NegotiateFollowsTheHeadersPrometheusSends) {
  // Prometheus 2.42 (Debian 12), hard-coded.
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                      "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Format::OpenMetrics);
  // Prometheus >= 2.49 default scrape_protocols.
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0;q=0.5,application/"
                      "openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/"
                      "*;q=0.2"),
            Format::OpenMetrics);
  // Protobuf first (native histograms): we do not speak protobuf, OpenMetrics is next.
  EXPECT_EQ(negotiate("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                      "encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,"
                      "application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;"
                      "q=0.2,*/*;q=0.1"),
            Format::OpenMetrics);
  // Prometheus 3 with UTF-8 names allowed.
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
                      "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
                      "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"),
            Format::OpenMetrics);
  // scrape_protocols: [PrometheusText0.0.4, OpenMetricsText1.0.0]: text is preferred.
  EXPECT_EQ(negotiate("text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;"
                      "q=0.4,*/*;q=0.3"),
            Format::PrometheusText);
  // scrape_protocols: [PrometheusText0.0.4].
  EXPECT_EQ(negotiate("text/plain;version=0.0.4;q=0.5,*/*;q=0.4"), Format::PrometheusText);
}

TEST(Exposition, NegotiateWithOtherClientsAndContentTypes) {
  EXPECT_EQ(exporter::content_type(Format::PrometheusText),
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(exporter::content_type(Format::OpenMetrics),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(negotiate(""), Format::PrometheusText);
  EXPECT_EQ(negotiate("*/*"), Format::PrometheusText);  // curl
  EXPECT_EQ(negotiate("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            Format::PrometheusText);  // a browser
  EXPECT_EQ(negotiate("application/openmetrics-text"), Format::OpenMetrics);
  EXPECT_EQ(negotiate("Application/OpenMetrics-Text; Version=1.0.0; charset=utf-8"),
            Format::OpenMetrics);
  EXPECT_EQ(negotiate("text/plain, application/openmetrics-text; version=\"1.0.0\""),
            Format::PrometheusText);  // equal q: the first listed wins
  EXPECT_EQ(negotiate("application/openmetrics-text; version=1.0.0, text/plain"),
            Format::OpenMetrics);
  // Refused or unknown versions are not OpenMetrics we can serve.
  EXPECT_EQ(negotiate("application/openmetrics-text;q=0,text/plain;q=0.1"), Format::PrometheusText);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=2.0.0,text/plain;q=0.1"),
            Format::PrometheusText);
  // A specific range overrides the wildcard: OpenMetrics explicitly less wanted than */*.
  EXPECT_EQ(negotiate("*/*;q=0.9,application/openmetrics-text;q=0.2"), Format::PrometheusText);
  EXPECT_EQ(negotiate("application/*;q=0.9,text/plain;q=0.5"), Format::OpenMetrics);
  // Equally specific ranges: the best q counts, wherever it is listed.
  EXPECT_EQ(negotiate("application/openmetrics-text;version=0.0.1;q=0.2,text/plain;q=0.5,"
                      "application/openmetrics-text;version=1.0.0;q=0.8"),
            Format::OpenMetrics);
}

// ---- Prometheus' own tools ------------------------------------------------------------

TEST(ExpositionPromtool, RealisticTextPassesPromtoolLintSilently) {
  REQUIRE_PROMTOOL(promtool);
  const std::string text = render(realistic_set(), Format::PrometheusText);
  const auto r = promtool_lint(promtool, text);
  EXPECT_EQ(r.status, 0) << r.output << "\n--- input ---\n" << text;
  EXPECT_EQ(r.output, "") << "promtool lint warnings:\n" << r.output;
}

TEST(ExpositionPromtool, LintCatchesABrokenExposition) {
  // The harness itself must be able to fail: a counter without _total and without HELP.
  REQUIRE_PROMTOOL(promtool);
  const auto r = promtool_lint(promtool, "# TYPE bad_counter counter\nbad_counter 1\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output, "");
}

TEST(ExpositionPromtool, RealisticOpenMetricsParsesWithPrometheusParser) {
  REQUIRE_PROMTOOL(promtool);
  const std::string om = render(realistic_set(), Format::OpenMetrics);
  const auto r = promtool_parse_openmetrics(promtool, om);
  EXPECT_EQ(r.status, 0) << r.output << "\n--- input ---\n" << om;
}

TEST(ExpositionPromtool, OpenMetricsWithExemplarsParsesWithPrometheusParser) {
  REQUIRE_PROMTOOL(promtool);
  MetricSet set;
  HistogramData h = latency_histogram();
  h.exemplars.resize(h.buckets.size() + 1);
  h.exemplars[1] =
      core::Exemplar{{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"}}, 0.004, 1700000000.25};
  h.exemplars[3] = core::Exemplar{{{"trace_id", "a # b \"} c"}}, 0.5, std::nullopt};
  set.add_histogram("tailcause_stage_duration_seconds", "Stage wall time.",
                    {{"tenant", "t 1"}, {"stage", "retrieval"}}, h);
  set.add("tailcause_requests", MetricType::Counter, "Requests.", {{"tenant", "t 1"}}, 12);
  set.families().back().samples.back().exemplar = core::Exemplar{{{"trace_id", "ab"}}, 1, {}};
  const std::string om = render(set, Format::OpenMetrics);
  const auto r = promtool_parse_openmetrics(promtool, om);
  EXPECT_EQ(r.status, 0) << r.output << "\n--- input ---\n" << om;
}

TEST(ExpositionPromtool, OpenMetricsParserRejectsABrokenExposition) {
  // The harness must be able to fail: a UNIT that is not a suffix, and a missing # EOF.
  REQUIRE_PROMTOOL(promtool);
  EXPECT_NE(
      promtool_parse_openmetrics(promtool, "# TYPE x counter\n# UNIT x seconds\nx_total 1\n# EOF\n")
          .status,
      0);
  EXPECT_NE(promtool_parse_openmetrics(promtool, "# TYPE x gauge\nx 1\n").status, 0);
}
