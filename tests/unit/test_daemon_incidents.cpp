// SPDX-License-Identifier: Apache-2.0
// Incidents through the daemon's glitch pipeline (no probes): stage records in, the incident in
// the journal (ended when the pipeline stops), in the metrics and the summary `diagnose` reads;
// a reload with new incident settings ends the open incident and starts learning afresh; and
// the diagnosis renders incidents in its headline, text and JSON.
#include <gtest/gtest.h>
#include <time.h>

#include "core/report/diagnosis.h"
#include "daemon/glitch_pipeline.h"
#include "export/journal.h"
#include "stage_builder.h"
#include "temp_dir.h"

namespace tailcause::daemon {
namespace {

constexpr uint64_t ms = 1'000'000;

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Retrievals 10 ms apart ending by now: `normal` ones of 3 ms (a little noise), then `slow`
// ones of 15 ms with the extra time in block I/O.
std::vector<core::StageRecord> retrievals(const std::string& tenant, int normal, int slow) {
  std::vector<core::StageRecord> out;
  const int n = normal + slow;
  const uint64_t now = monotonic_ns();
  for (int i = 0; i < n; i++) {
    const uint64_t base = (3 + (i % 3 == 0 ? 1 : 0)) * ms;
    const uint64_t wall = i < normal ? base : 5 * base;
    out.push_back(testing::StageBuilder()
                      .request(static_cast<uint64_t>(i + 1))
                      .pid(4242)
                      .tenant(tenant)
                      .agent("rag")
                      .stage("retrieval")
                      .kind(core::StageKind::generation)
                      .component(core::Component::on_cpu, base)
                      .component(core::Component::block_io, wall - base)
                      .end_ns(now - static_cast<uint64_t>(n - i) * 10 * ms)
                      .build());
  }
  return out;
}

core::Config config_in(const testing::TempDir& dir) {
  core::Config c;
  c.breaker.socket = "";
  c.breaker.state_file = "";
  c.journal.path = dir.file("journal.db");
  c.glitch.p99_factor = 1000;  // glitch rows are not what this is about
  c.glitch.incident.min_samples = 50;
  return c;
}

std::vector<exporter::IncidentRow> journaled(const std::string& path) {
  exporter::Journal journal(path, exporter::JournalLimits{});
  return journal.query_incidents(exporter::JournalFilter{});
}

TEST(DaemonIncidents, ASustainedSlowdownIsOneIncidentInJournalMetricsAndSummary) {
  testing::TempDir dir;
  GlitchPipeline p(config_in(dir), PipelineOptions{});
  for (const auto& r : retrievals("ta", 200, 100)) p.observe(r);
  for (const auto& r : retrievals("tb", 300, 0)) p.observe(r);

  const auto live = p.incidents();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_TRUE(live[0].active);
  EXPECT_EQ(live[0].tenant, "ta");
  EXPECT_EQ(live[0].slowed, 100u);
  EXPECT_EQ(live[0].cause, "block_io");
  core::MetricSet m;
  p.collect(m);
  const core::Sample* total = m.find(
      core::metric::kIncidents, {{"tenant", "ta"}, {"stage", "retrieval"}, {"cause", "block_io"}});
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->value, 1);
  const core::Sample* active = m.find(core::metric::kIncidentsActive, {{"tenant", "ta"}});
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active->value, 1);
  EXPECT_EQ(p.summary().incidents.size(), 1u);

  p.stop();  // ends what is under way and writes it
  const auto rows = journaled(dir.file("journal.db"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].active);
  EXPECT_EQ(rows[0].tenant, "ta");
  EXPECT_EQ(rows[0].stages, "retrieval");
  EXPECT_EQ(rows[0].cause, "block_io");
  EXPECT_EQ(rows[0].slowed, 100);
  EXPECT_GT(rows[0].end_ns, rows[0].start_ns);
  EXPECT_NEAR(rows[0].median_ratio, 5.0, 0.6);
  EXPECT_NE(rows[0].summary.find("retrieval"), std::string::npos);
}

// Baselines survive a restart through the journal: the next run judges its first stages.
TEST(DaemonIncidents, ARestartedDaemonJudgesWithTheBaselinesItKept) {
  testing::TempDir dir;
  {
    GlitchPipeline p(config_in(dir), PipelineOptions{});
    for (const auto& r : retrievals("ta", 200, 0)) p.observe(r);
    p.stop();  // saves them
  }
  exporter::Journal journal(dir.file("journal.db"), exporter::JournalLimits{});
  const auto rows = journal.read_baselines();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tenant, "ta");
  EXPECT_EQ(rows[0].stage, "retrieval");
  EXPECT_GE(rows[0].count, 150);
  // 5 normal retrievals then 30 slow ones: far too few to learn from, enough to judge.
  GlitchPipeline p(config_in(dir), PipelineOptions{});
  for (const auto& r : retrievals("ta", 5, 30)) p.observe(r);
  const auto live = p.incidents();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].cause, "block_io");
  EXPECT_GE(live[0].slowed, 25u);
  p.stop();
}

TEST(DaemonIncidents, ReloadWithNewSettingsEndsTheOpenIncident) {
  testing::TempDir dir;
  core::Config c = config_in(dir);
  GlitchPipeline p(c, PipelineOptions{});
  for (const auto& r : retrievals("ta", 200, 50)) p.observe(r);
  ASSERT_EQ(p.incidents().size(), 1u);

  p.reconfigure(c);  // the same settings: it goes on
  ASSERT_EQ(p.incidents().size(), 1u);
  EXPECT_TRUE(p.incidents()[0].active);

  c.glitch.incident.factor = 3;
  p.reconfigure(c);  // new settings: a new detector that learns afresh
  EXPECT_TRUE(p.incidents().empty());
  for (const auto& r : retrievals("ta", 0, 30)) p.observe(r);
  EXPECT_TRUE(p.incidents().empty()) << "judged before it learned";
  p.stop();
  const auto rows = journaled(dir.file("journal.db"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].active);
}

TEST(DaemonIncidents, DisabledOpensNone) {
  testing::TempDir dir;
  core::Config c = config_in(dir);
  c.glitch.incident.enabled = false;
  GlitchPipeline p(c, PipelineOptions{});
  for (const auto& r : retrievals("ta", 200, 100)) p.observe(r);
  EXPECT_TRUE(p.incidents().empty());
  p.stop();
  EXPECT_TRUE(journaled(dir.file("journal.db")).empty());
}

TEST(DiagnosisIncidents, HeadlineTextAndJson) {
  core::Incident i;
  i.id = 1;
  i.tenant = "ta";
  i.active = false;
  i.start_ns = 1'000 * ms;
  i.end_ns = 21'000 * ms;
  i.stages = {core::IncidentStage{"retrieval", 3 * ms, 84, 12.5, {}}};
  i.slowed = 84;
  i.peak_ratio = 12.5;
  i.median_ratio = 4.8;
  i.cause = "block_io";
  i.cause_share = 0.91;
  core::AnalyzerSummary s;
  s.incidents = {i};
  core::MetricSet none;
  const core::Diagnosis d = core::build_diagnosis(s, none, none, 30.0);
  ASSERT_EQ(d.incidents.size(), 1u);
  const std::string headline = core::diagnosis_headline(d);
  EXPECT_EQ(headline.rfind("1 incident (sustained slowdown): tenant ta: retrieval 4.8x its 3 ms "
                           "baseline (peak 12.5x), 84 stages slowed, block_io 91% of the extra "
                           "time for 20 s",
                           0),
            0u)
      << headline;
  const std::string text = core::render_diagnosis_text(d);
  EXPECT_NE(text.find("Incidents (sustained slowdowns"), std::string::npos) << text;
  EXPECT_NE(text.find("  tenant ta: retrieval 4.8x"), std::string::npos) << text;
  const auto j = core::diagnosis_json(d);
  ASSERT_EQ(j["incidents"].size(), 1u);
  EXPECT_EQ(j["incidents"][0]["tenant"], "ta");
  EXPECT_EQ(j["incidents"][0]["cause"], "block_io");
  EXPECT_EQ(j["incidents"][0]["stage"], "retrieval");
  EXPECT_DOUBLE_EQ(j["incidents"][0]["duration_seconds"].get<double>(), 20.0);
  EXPECT_EQ(j["incidents"][0]["stages"][0]["slowed"], 84);

  // Without incidents, nothing changes: no section content, an empty array.
  const core::Diagnosis quiet = core::build_diagnosis(core::AnalyzerSummary{}, none, none, 30.0);
  EXPECT_EQ(core::diagnosis_headline(quiet).rfind("no glitches: ", 0), 0u);
  EXPECT_TRUE(core::diagnosis_json(quiet)["incidents"].empty());
}

}  // namespace
}  // namespace tailcause::daemon
