// SPDX-License-Identifier: Apache-2.0
// The daemon's glitch pipeline without probes: records fed as the attrib family would route
// them, glitches journaled by the journal thread (about once a second, the rest on stop), the
// breaker's state saved and restored across pipelines, SIGHUP-style reconfiguration keeping
// the breakers, and sinks that cannot start refused with a clear error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <time.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "core/host/clock.h"
#include "daemon/glitch_pipeline.h"
#include "bpf/attrib.h"
#include "core/trace/propagation.h"
#include "export/journal.h"
#include "stage_builder.h"
#include "temp_dir.h"

namespace tailcause::daemon {
namespace {

constexpr uint64_t ms = 1'000'000;

using core::monotonic_ns;

// A finished stage of `wall_ms`, all of it on CPU, that ended just now.
core::StageRecord stage(const std::string& tenant, uint64_t request, uint64_t wall_ms,
                        const std::string& name = "generation") {
  return testing::StageBuilder()
      .request(request)
      .pid(4242)
      .tenant(tenant)
      .agent("rag")
      .trace_id("0123456789abcdef0123456789abcd" + std::to_string(10 + request % 90))
      .tid(4242)
      .stage(name)
      .kind(core::StageKind::generation)
      .end_ns(monotonic_ns())
      .component(core::Component::on_cpu, wall_ms * ms)
      .build();
}

// Only the sinks a test names: no breaker socket, no OTLP, no default paths under /var.
core::Config config_in(const testing::TempDir& dir, bool journal = true, bool state = false) {
  core::Config c;
  c.breaker.socket = "";
  c.breaker.state_file = state ? dir.file("breaker.state") : "";
  c.journal.path = journal ? dir.file("journal.db") : "";
  return c;
}

std::vector<exporter::GlitchRow> journaled(const std::string& path) {
  exporter::Journal journal(path, exporter::JournalLimits{});
  exporter::JournalFilter all;
  all.limit = exporter::Journal::kMaxQueryLimit;
  return journal.query(all);
}

double metric(GlitchPipeline& p, const std::string& name, const core::Labels& labels = {}) {
  core::MetricSet m;
  p.collect(m);
  const core::Sample* s = m.find(name, labels);
  return s ? s->value : -1;
}

// The sum of every series of one family (-1 when the family is absent).
double family_total(GlitchPipeline& p, const std::string& name) {
  core::MetricSet m;
  p.collect(m);
  for (const auto& f : m.families()) {
    if (f.name != name) continue;
    double sum = 0;
    for (const auto& s : f.samples) sum += s.value;
    return sum;
  }
  return -1;
}

TEST(DaemonPipeline, StopFlushesEveryPendingGlitchToTheJournal) {
  testing::TempDir dir;
  GlitchPipeline p(config_in(dir), PipelineOptions{});
  for (uint64_t i = 1; i <= 5; ++i) p.observe(stage("ta", i, 300));  // over the 200 ms SLO
  p.observe(stage("tb", 9, 20));                                     // well within it
  EXPECT_EQ(p.glitches(), 5u);
  p.stop();

  const auto rows = journaled(dir.file("journal.db"));
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.tenant, "ta");
    EXPECT_EQ(r.stage, "generation");
    EXPECT_EQ(r.cause, "on_cpu");
    EXPECT_NEAR(r.wall_seconds, 0.3, 1e-9);
    EXPECT_EQ(r.verdict.rfind("over_slo 200 ms", 0), 0u) << r.verdict;
  }
  EXPECT_EQ(metric(p, "tailcause_journal_glitches_written"), 5);
  EXPECT_EQ(metric(p, "tailcause_journal_glitches_dropped"), 0);
  p.stop();  // idempotent
}

TEST(DaemonPipeline, AGlitchedRequestLeavesItsPropagationTreeInTheJournal) {
  testing::TempDir dir;
  GlitchPipeline p(config_in(dir), PipelineOptions{});
  // Request 1: its retrieval waited 250 ms on a helper thread that was throttled.
  core::StageRecord retrieval = stage("ta", 1, 300, "retrieval");
  retrieval.waker = core::Waker{4243, 250 * ms, core::Component::cpu_throttled, true, false};
  core::StageRecord helper = stage("ta", 1, 280, "retrieval");
  helper.tid = 4243;
  helper.flags = ATTRIB_SPAN_WORKER;
  p.observe(helper);
  p.observe(retrieval);
  core::RequestRecord request;
  request.id = retrieval.id;
  request.start_ns = retrieval.start_ns - 5 * ms;
  request.end_ns = retrieval.end_ns + 5 * ms;
  p.observe(request);
  // Request 2 did not glitch: no tree.
  core::StageRecord fast = stage("ta", 2, 10, "retrieval");
  p.observe(fast);
  request.id = fast.id;
  p.observe(request);
  p.stop();

  exporter::Journal journal(dir.file("journal.db"), exporter::JournalLimits{});
  EXPECT_EQ(journal.propagation_count(), 1);
  const auto trees = journal.find_propagation(retrieval.id.trace_id);
  ASSERT_EQ(trees.size(), 1u);
  const auto tree = core::propagation_from_json(nlohmann::json::parse(trees[0].tree));
  ASSERT_EQ(tree.stages.size(), 1u);
  ASSERT_EQ(tree.stages[0].children.size(), 1u);
  const core::PropagationNode& waited_on = tree.stages[0].children[0];
  EXPECT_EQ(waited_on.tid, 4243u);
  EXPECT_TRUE(waited_on.worker);
  EXPECT_EQ(waited_on.wait_ns, 250 * ms);
  EXPECT_EQ(waited_on.wait_component, core::Component::cpu_throttled);
  EXPECT_EQ(tree.stages[0].glitch.rfind("over_slo 200 ms", 0), 0u) << tree.stages[0].glitch;
}

TEST(DaemonPipeline, JournalThreadWritesWhileRunning) {
  testing::TempDir dir;
  GlitchPipeline p(config_in(dir), PipelineOptions{});
  p.observe(stage("ta", 1, 400));
  // The thread writes about once a second; allow it many rounds rather than timing one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (metric(p, "tailcause_journal_glitches_written") < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(metric(p, "tailcause_journal_glitches_written"), 1) << "the journal thread never wrote";
  const auto rows = journaled(dir.file("journal.db"));  // a second reader while the daemon runs
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tenant, "ta");
  p.stop();
}

TEST(DaemonPipeline, WithoutAJournalPathNothingIsWrittenAndNoSeries) {
  testing::TempDir dir;
  GlitchPipeline p(config_in(dir, /*journal=*/false), PipelineOptions{});
  p.observe(stage("ta", 1, 300));
  EXPECT_EQ(p.glitches(), 1u);
  p.stop();
  EXPECT_FALSE(std::filesystem::exists(dir.file("journal.db")));
  EXPECT_EQ(metric(p, "tailcause_journal_glitches_written"), -1);
}

TEST(DaemonPipeline, AnalysisOnlyOptionsOpenNoSink) {
  testing::TempDir dir;
  PipelineOptions o;
  o.journal = o.otlp = o.breaker_socket = o.persist_breaker = false;
  GlitchPipeline p(config_in(dir, true, true), o);
  for (uint64_t i = 1; i <= 3; ++i) p.observe(stage("ta", i, 300));
  p.stop();
  EXPECT_EQ(p.glitches(), 3u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("journal.db")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("breaker.state")));
}

TEST(DaemonPipeline, BreakerStateIsSavedAndRestoredByTheNextPipeline) {
  testing::TempDir dir;
  {
    GlitchPipeline p(config_in(dir, false, true), PipelineOptions{});
    for (uint64_t i = 1; i <= 3; ++i) p.observe(stage("ta", i, 300));  // trips after 3 slow stages
    EXPECT_EQ(metric(p, "tailcause_circuit_breaker_open", {{"tenant", "ta"}, {"agent", "rag"}}), 1);
    p.stop();
  }
  ASSERT_TRUE(std::filesystem::exists(dir.file("breaker.state")));
  GlitchPipeline next(config_in(dir, false, true), PipelineOptions{});
  EXPECT_EQ(metric(next, "tailcause_circuit_breaker_open", {{"tenant", "ta"}, {"agent", "rag"}}),
            1);
  next.stop();
}

TEST(DaemonPipeline, ReconfigureAppliesNewSettingsAndKeepsTheBreakers) {
  testing::TempDir dir;
  core::Config c = config_in(dir, false, false);
  GlitchPipeline p(c, PipelineOptions{});
  for (uint64_t i = 1; i <= 3; ++i) p.observe(stage("ta", i, 300));
  ASSERT_EQ(p.glitches(), 3u);

  ASSERT_EQ(family_total(p, core::metric::kGlitches), 3);

  c.glitch.stage_slo_ms = 1000;
  p.reconfigure(c);
  EXPECT_EQ(family_total(p, core::metric::kGlitches), 3)
      << "a reload must not reset the counter (Prometheus would read it as a restart)";
  const uint64_t before = p.glitches();
  EXPECT_EQ(before, 3u);
  p.observe(stage("ta", 4, 300));
  EXPECT_EQ(p.glitches(), before) << "300 ms is within the new 1 s SLO";
  p.observe(stage("ta", 5, 1200));
  EXPECT_EQ(p.glitches(), before + 1);
  EXPECT_EQ(metric(p, "tailcause_circuit_breaker_open", {{"tenant", "ta"}, {"agent", "rag"}}), 1)
      << "the breaker's state survives a reload";
  p.stop();
}

TEST(DaemonPipeline, AJournalThatCannotBeOpenedIsAStartupError) {
  testing::TempDir dir;
  std::ofstream(dir.file("plain")) << "a file, not a directory\n";
  core::Config c = config_in(dir);
  c.journal.path = dir.file("plain") + "/journal.db";
  try {
    GlitchPipeline p(c, PipelineOptions{});
    FAIL() << "a journal under a regular file was accepted";
  } catch (const StartupError& e) {
    EXPECT_NE(std::string(e.what()).find("journal: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.journal.path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tailcause::daemon
