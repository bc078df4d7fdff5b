// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the JSON API behind /api/v1, as anyone who reaches the port can call it. The input
// is "PATH?QUERY" for Api::handle over a history of real-shaped scrapes, a stage heatmap and a
// journal with glitches in it (the glitch list turns parameters into SQL bindings). Every reply is
// 200, 400 or 404 with a JSON body that parses; never a crash, never 5xx.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/record/schema.h"
#include "export/api/api.h"
#include "export/journal.h"

namespace {

namespace api = tailcause::exporter::api;
namespace core = tailcause::core;
namespace m = core::metric;

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

// One scrape with a series in every family an endpoint reads; counters grow with n.
core::MetricSet scrape(double n) {
  core::MetricSet s;
  core::HistogramData h;
  h.buckets = {{0.01, static_cast<uint64_t>(n)}, {1, static_cast<uint64_t>(2 * n)}};
  h.count = static_cast<uint64_t>(2 * n);
  h.sum = 0.5 * n;
  const core::Labels stage{{"tenant", "ta"}, {"agent", "rag"}, {"stage", "generation"}};
  s.add_histogram(m::kStageDurationSeconds, "", stage, h);
  core::Labels component = stage;
  component.emplace_back("component", "cpu_throttled");
  s.add(m::kStageTimeSeconds, core::MetricType::Counter, "", component, 0.4 * n);
  s.add(m::kGlitches, core::MetricType::Counter, "",
        {{"tenant", "ta"}, {"stage", "generation"}, {"cause", "cpu_throttled"}}, n);
  s.add(m::kCacheLookups, core::MetricType::Counter, "",
        {{"tenant", "ta"}, {"cache", "vec"}, {"result", "miss"}}, n);
  s.add(m::kCpuThrottledSeconds, core::MetricType::Counter, "", {{"cgroup", "/a"}}, 0.5 * n);
  s.add(m::kCgroupPreemptedSeconds, core::MetricType::Counter, "",
        {{"cgroup", "/a"}, {"by_cgroup", "/hog"}}, 0.25 * n);
  s.add_histogram(m::kTcpRttSeconds, "", {{"local", "127.0.0.1:*"}, {"remote", "10.0.0.1:80"}}, h);
  s.add_histogram(m::kLayerDurationSeconds, "", {{"layer", "3"}, {"batch_size", "8"}}, h);
  return s;
}

const api::Api& the_api() {
  static const api::Api* a = [] {
    char dir[] = "/tmp/fuzz_api_query.XXXXXX";
    if (!mkdtemp(dir)) std::abort();
    const std::string path = std::string(dir) + "/journal.db";
    {
      tailcause::exporter::Journal journal(path, {});
      tailcause::exporter::GlitchRow row;
      row.time_ns = kT0 + 5 * kS;
      row.tenant = "ta";
      row.stage = "generation";
      row.wall_seconds = 0.6;
      row.cause = "cpu_throttled";
      row.verdict = "generation 600 ms, 80% cpu_throttled";
      row.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
      journal.append({row, row});
    }
    auto* made = new api::Api([](core::MetricSet&) {}, api::ApiSettings{.journal_path = path});
    for (int i = 0; i <= 10; ++i) made->sample(scrape(10.0 * i), kT0 + i * 2 * kS);
    auto stages = std::make_shared<core::StageHeatmap>();
    for (int64_t t = kT0; t < kT0 + 22 * kS; t += kS / 8)
      stages->add("ta", "generation", t, static_cast<uint64_t>(t % 997) * 1'000'000);
    made->set_stage_heatmap(stages);
    return made;
  }();
  return *a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t q = text.find('?');
  const api::Reply reply = the_api().handle(
      text.substr(0, q), q == std::string_view::npos ? "" : text.substr(q + 1), kT0 + 22 * kS);
  if (reply.status != 200 && reply.status != 400 && reply.status != 404) {
    std::fprintf(stderr, "status %u: %s\n", reply.status, reply.body.c_str());
    std::abort();
  }
  if (reply.content_type != "application/json") std::abort();
  if (!nlohmann::json::accept(reply.body)) std::abort();
  return 0;
}
