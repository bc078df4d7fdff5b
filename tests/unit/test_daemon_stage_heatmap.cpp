// SPDX-License-Identifier: Apache-2.0
// The stage heatmap through the daemon's glitch pipeline (no probes): every owner stage is
// counted in the cell of the second it ended, on the same clock as its glitch's journal row,
// so each cell's click (the page's /glitches query) lists exactly the cell's glitches.
#include <gtest/gtest.h>

#include <chrono>

#include "core/host/clock.h"
#include "bpf/attrib.h"
#include "daemon/glitch_pipeline.h"
#include "export/api/api.h"
#include "export/breaker_store.h"
#include "stage_builder.h"
#include "temp_dir.h"

namespace tailcause::daemon {
namespace {

constexpr uint64_t ms = 1'000'000;

int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json get(const exporter::api::Api& api, const std::string& path, const std::string& query,
                   int64_t now_ns) {
  const auto r = api.handle(path, query, now_ns);
  EXPECT_EQ(r.status, 200u) << path << "?" << query << ": " << r.body;
  return nlohmann::json::parse(r.body);
}

TEST(DaemonStageHeatmap, EachCellListsExactlyItsGlitches) {
  testing::TempDir dir;
  core::Config c;
  c.breaker.socket = "";
  c.breaker.state_file = "";
  c.journal.path = dir.file("journal.db");
  c.glitch.p99_factor = 1000;  // only the 200 ms stage SLO makes glitches here
  c.glitch.incident.enabled = false;
  GlitchPipeline p(c, PipelineOptions{});

  // 800 generations ending 4 ms apart over the last 3.2 s: fast ones, slow ones on both sides
  // of a bucket bound, a worker span and an aborted stage (neither is judged nor counted).
  const uint64_t now = core::monotonic_ns();
  const uint64_t walls[] = {50 * ms, (1ull << 28) - 1, 1ull << 28, 300 * ms, 50 * ms};
  size_t owner = 0, slow = 0;
  for (uint64_t i = 0; i < 800; ++i) {
    const uint64_t wall = walls[i % 5];
    const core::StageRecord r =
        testing::StageBuilder()
            .request(i + 1)
            .pid(4242)
            .tenant(i % 2 ? "ta" : "tb")
            .agent("rag")
            .stage("generation")
            .kind(i % 97 == 0 ? core::StageRecord::kWorkerSpanKind
                              : core::stage_kind_value(core::StageKind::tool))
            .flags(i % 89 == 0 ? ATTRIB_SPAN_ABORTED : 0)
            .end_ns(now - (800 - i) * 4 * ms)
            .component(core::Component::on_cpu, wall)
            .build();
    p.observe(r);
    if (r.owner_stage()) ++owner, slow += wall > 200 * ms;
  }
  p.stop();  // the journal has every glitch

  exporter::api::Api api([](core::MetricSet&) {}, {.journal_path = c.journal.path});
  api.set_stage_heatmap(p.stage_heatmap());
  const int64_t unix_now = realtime_ns();
  const auto hm = get(api, "/heatmap/stage", "stage=generation&since=10&step=1", unix_now);
  const auto& bounds = hm["bounds"];
  size_t counted = 0, listed_all = 0;
  for (const auto& cell : hm["cells"]) {
    const int64_t to = hm["x"][cell[0].get<size_t>()], from = to - 1;
    const size_t b = cell[1];
    const double lo = b ? bounds[b - 1].get<double>() : 0;
    const auto listed = get(api, "/glitches",
                            "stage=generation&limit=500&from=" + std::to_string(from) + "&to=" +
                                std::to_string(to) + "&min_s=" + (b ? bounds[b - 1].dump() : "0") +
                                "&max_s=" + (b < bounds.size() ? bounds[b].dump() : "1e6"),
                            unix_now)["glitches"];
    const size_t n = cell[2];
    // Buckets from 134 ms up hold only slow stages here (each a glitch), lower ones none.
    EXPECT_EQ(listed.size(), lo >= 0.134 ? n : 0) << "cell " << cell;
    counted += n;
    listed_all += listed.size();
  }
  EXPECT_EQ(counted, owner);
  EXPECT_EQ(listed_all, slow);
  EXPECT_GT(slow, 400u);
}

}  // namespace
}  // namespace tailcause::daemon
