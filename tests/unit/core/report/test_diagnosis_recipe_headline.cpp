// SPDX-License-Identifier: Apache-2.0
// The diagnose headline when no SDK request was seen (recipe spans only): it says what was seen
// (stages, throttling, neighbours, peers) instead of a bare "0 requests from 0 tenants".
#include <gtest/gtest.h>

#include <string>

#include "core/report/diagnosis.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kMs = 1'000'000;

HistogramData hist(uint64_t count, double sum) {
  HistogramData h;
  h.count = count;
  h.sum = sum;
  return h;
}

TEST(DiagnosisHeadline, RecipeOnlyRunSaysWhatItSaw) {
  AnalyzerSummary s;
  StageSummary st;
  st.tenant = "/agents/ta";
  st.stage = "retrieval";
  st.count = 120;
  st.p50_ns = 4 * kMs;
  st.p99_ns = 31 * kMs;
  st.component_ns[static_cast<size_t>(Component::cpu_throttled)] = 900 * kMs;
  st.component_ns[static_cast<size_t>(Component::on_cpu)] = 100 * kMs;
  StageSummary gen = st;
  gen.stage = "generation";
  gen.count = 40;
  s.stages = {st, gen};
  MetricSet before, after;
  const Labels a{{"cgroup", "/agents/ta"}};
  after.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", a, 9.0);
  after.add("tailcause_cpu_throttled_periods", MetricType::Counter, "", a, 90);
  after.add("tailcause_cpu_periods", MetricType::Counter, "", a, 100);
  const Labels peer{{"local", "127.0.0.1:*"}, {"remote", "127.0.0.1:7070"}};
  after.add_histogram("tailcause_tcp_connection_duration_seconds", "", peer, hist(10, 3.01));
  const auto d = build_diagnosis(s, before, after, 20.0);
  ASSERT_EQ(d.requests, 0u);
  const std::string h = diagnosis_headline(d);
  EXPECT_EQ(h.rfind("in 20 s without SDK requests (no per-request verdicts): stages ", 0), 0u) << h;
  EXPECT_EQ(h.find("no glitches"), std::string::npos) << "not above 90% throttling: " << h;
  EXPECT_NE(h.find("/agents/ta retrieval x120 (P99 31 ms, cpu_throttled 90%)"), std::string::npos)
      << h;
  EXPECT_NE(h.find("/agents/ta generation x40"), std::string::npos) << h;
  EXPECT_LT(h.find("retrieval x120"), h.find("generation x40")) << "most spans first: " << h;
  EXPECT_NE(h.find("cgroup /agents/ta throttled 9.0 s (90% of its periods)"), std::string::npos)
      << h;
  EXPECT_NE(h.find("slowest TCP peer 127.0.0.1:* -> 127.0.0.1:7070 (301 ms per connection)"),
            std::string::npos)
      << h;
}

TEST(DiagnosisHeadline, NothingTracedSaysSo) {
  MetricSet none;
  const auto d = build_diagnosis(AnalyzerSummary{}, none, none, 5.0);
  const std::string h = diagnosis_headline(d);
  EXPECT_EQ(h.rfind("no glitches: 0 requests from 0 tenants in 5 s", 0), 0u) << h;
  EXPECT_NE(h.find("nothing traced"), std::string::npos) << h;
}

}  // namespace
}  // namespace tailcause::core
