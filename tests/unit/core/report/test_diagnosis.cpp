// SPDX-License-Identifier: Apache-2.0
// The diagnose report: tenants' QPS and cache breakdown, stage leaders, why each tenant
// glitched, and the deltas of the probe families' metrics (throttling, noisy neighbours, TCP).
#include <gtest/gtest.h>

#include <string>

#include "core/report/diagnosis.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kMs = 1'000'000;

Glitch glitch(const std::string& tenant, const std::string& stage, const std::string& cause,
              uint64_t wall_ms, const std::string& evidence) {
  Glitch g;
  g.tenant = tenant;
  g.agent = "rag-agent";
  g.stage = stage;
  g.cause = cause;
  g.check.reason = GlitchReason::over_slo;
  g.check.wall_ns = wall_ms * kMs;
  g.check.slo_ns = 200 * kMs;
  g.verdict.evidence = evidence;
  g.verdict.culprits.push_back(Culprit{Component::cpu_throttled, wall_ms * kMs * 6 / 10, 0.6, 0});
  return g;
}

AnalyzerSummary quota_summary() {
  AnalyzerSummary s;
  TenantSummary ta;
  ta.tenant = "ta";
  ta.requests = 100;
  ta.glitches = 12;
  ta.cache_lookups = 100;
  ta.cache_misses = 30;
  ta.cache_stales = 10;
  TenantSummary tb;
  tb.tenant = "tb";
  tb.requests = 50;
  s.tenants = {tb, ta};
  StageSummary emb;
  emb.tenant = "ta";
  emb.stage = "embedding";
  emb.count = 100;
  emb.p50_ns = 3 * kMs;
  emb.p99_ns = 9 * kMs;
  emb.component_ns[static_cast<size_t>(Component::on_cpu)] = 300 * kMs;
  emb.component_ns[static_cast<size_t>(Component::runqueue)] = 100 * kMs;
  StageSummary gen = emb;
  gen.stage = "generation";
  gen.glitches = 10;
  gen.component_ns = {};
  gen.component_ns[static_cast<size_t>(Component::cpu_throttled)] = 900 * kMs;
  gen.component_ns[static_cast<size_t>(Component::on_cpu)] = 100 * kMs;
  s.stages = {gen, emb};
  // Slowest first, as the analyzer keeps them: a slow request explained by its stage.
  s.top_glitches = {
      glitch("ta", "request", "cpu_throttled", 1500,
             "request 1.5 s: generation 1.2 s, 60% cpu_throttled"),
      glitch("ta", "generation", "cpu_throttled", 1200, "generation 1.2 s, 60% cpu_throttled"),
      glitch("ta", "tool", "network", 300, "tool 300 ms, 95% network: peer 127.0.0.1:7070")};
  s.glitches = 15;
  return s;
}

void add_glitch_counts(MetricSet& m, uint64_t scale) {
  auto add = [&](const std::string& stage, const std::string& cause, uint64_t n) {
    m.add("tailcause_glitches", MetricType::Counter, "",
          {{"tenant", "ta"}, {"stage", stage}, {"cause", cause}}, static_cast<double>(n * scale));
  };
  add("generation", "cpu_throttled", 10);
  add("tool", "network", 2);
  add("request", "cpu_throttled", 3);
}

TEST(Diagnosis, TenantsAndStages) {
  MetricSet before, after;
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.tenants.size(), 2u);
  EXPECT_EQ(d.tenants[0].tenant, "ta");  // by name
  EXPECT_DOUBLE_EQ(d.tenants[0].qps, 10.0);
  EXPECT_DOUBLE_EQ(d.tenants[0].cache_breakdown_rate, 0.4);
  ASSERT_TRUE(d.tenants[0].embedding_p99_ns);
  EXPECT_EQ(*d.tenants[0].embedding_p99_ns, 9 * kMs);
  EXPECT_FALSE(d.tenants[1].embedding_p99_ns);
  EXPECT_DOUBLE_EQ(d.tenants[1].cache_breakdown_rate, 0.0);
  EXPECT_EQ(d.requests, 150u);
  ASSERT_EQ(d.stages.size(), 2u);
  EXPECT_EQ(d.stages[0].summary.stage, "embedding");
  EXPECT_EQ(d.stages[1].summary.stage, "generation");
  ASSERT_TRUE(d.stages[1].leading);
  EXPECT_EQ(*d.stages[1].leading, Component::cpu_throttled);
  EXPECT_DOUBLE_EQ(d.stages[1].leading_share, 0.9);
  // Stage glitches before slow requests.
  ASSERT_EQ(d.top_glitches.size(), 3u);
  EXPECT_EQ(d.top_glitches[0].stage, "generation");
  EXPECT_EQ(d.top_glitches[1].stage, "tool");
  EXPECT_EQ(d.top_glitches[2].stage, "request");
}

TEST(Diagnosis, VerdictFromGlitchCounterDeltas) {
  MetricSet before, after;
  add_glitch_counts(before, 1);
  add_glitch_counts(after, 3);  // grew by 20, 4 and 6
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.causes.size(), 3u);
  EXPECT_EQ(d.causes[0].stage, "generation");
  EXPECT_EQ(d.causes[0].count, 20u);
  ASSERT_EQ(d.verdicts.size(), 1u);
  const auto& v = d.verdicts[0];
  EXPECT_EQ(v.tenant, "ta");
  EXPECT_EQ(v.stage, "generation");
  EXPECT_EQ(v.cause, "cpu_throttled");
  EXPECT_EQ(v.count, 20u);
  EXPECT_EQ(v.tenant_glitches, 24u);  // slow requests are not stage glitches
  ASSERT_TRUE(v.example);
  EXPECT_EQ(v.example->stage, "generation");  // the stage's own glitch before a slow request
  const std::string headline = diagnosis_headline(d);
  EXPECT_NE(
      headline.find("tenant ta glitched most: 20 of its 24 glitches were in generation with cause "
                    "cpu_throttled"),
      std::string::npos)
      << headline;
  EXPECT_NE(headline.find("; why: generation 1.2 s, 60% cpu_throttled"), std::string::npos)
      << headline;
}

TEST(Diagnosis, ExamplePrefersDetailedEvidence) {
  AnalyzerSummary s = quota_summary();
  s.top_glitches.insert(
      s.top_glitches.begin() + 1,
      glitch("ta", "generation", "cpu_throttled", 1300, "generation 1.3 s, 60% cpu_throttled"));
  s.top_glitches[2].verdict.evidence =
      "generation 1.2 s, 60% cpu_throttled: cgroup /ta throttled in 9 of 10 periods";
  MetricSet before, after;
  add_glitch_counts(after, 1);
  const auto d = build_diagnosis(s, before, after, 10.0);
  ASSERT_TRUE(d.verdicts.at(0).example);
  EXPECT_EQ(d.verdicts[0].example->check.wall_ns, 1200 * kMs);  // not the slower one without detail
  // Without any detailed one, the slowest.
  s.top_glitches[2].verdict.evidence = "generation 1.2 s, 60% cpu_throttled";
  const auto plain = build_diagnosis(s, before, after, 10.0);
  EXPECT_EQ(plain.verdicts.at(0).example->check.wall_ns, 1300 * kMs);
}

TEST(Diagnosis, VerdictFromTopGlitchesWithoutCounter) {
  MetricSet none;
  const auto d = build_diagnosis(quota_summary(), none, none, 10.0);
  ASSERT_EQ(d.verdicts.size(), 1u);
  // generation and tool glitched once each in the top list: the tie keeps the name order.
  EXPECT_EQ(d.verdicts[0].tenant_glitches, 2u);
  EXPECT_EQ(d.verdicts[0].count, 1u);
}

TEST(Diagnosis, OnlySlowRequests) {
  AnalyzerSummary s = quota_summary();
  s.top_glitches = {glitch("ta", "request", "slow", 900, "request 900 ms")};
  MetricSet none;
  const auto d = build_diagnosis(s, none, none, 10.0);
  ASSERT_EQ(d.verdicts.size(), 1u);
  EXPECT_EQ(d.verdicts[0].stage, "request");
  EXPECT_NE(diagnosis_headline(d).find("tenant ta's requests were slow"), std::string::npos);
}

TEST(Diagnosis, NoGlitchesSaysSo) {
  AnalyzerSummary s = quota_summary();
  s.top_glitches.clear();
  s.glitches = 0;
  MetricSet none;
  DiagnosisOptions o;
  o.stage_slo_ns = 50 * kMs;
  const auto d = build_diagnosis(s, none, none, 20.0, o);
  EXPECT_TRUE(d.verdicts.empty());
  const std::string h = diagnosis_headline(d);
  EXPECT_EQ(h.rfind("no glitches: 150 requests from 2 tenants (ta, tb) in 20 s", 0), 0u) << h;
  EXPECT_NE(h.find("stage 50 ms, request 800 ms"), std::string::npos) << h;
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Top glitches\n  none seen\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Throttled cgroups\n  none seen\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Noisy neighbours\n  none seen\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Slowest TCP peers\n  none seen\n"), std::string::npos) << text;
}

TEST(Diagnosis, ThrottledCgroupsFromDeltas) {
  MetricSet before, after;
  const Labels a{{"cgroup", "/agents/ta"}}, b{{"cgroup", "/agents/tb"}};
  before.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", a, 1.0);
  before.add("tailcause_cpu_throttled_periods", MetricType::Counter, "", a, 10);
  before.add("tailcause_cpu_periods", MetricType::Counter, "", a, 20);
  before.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", b, 5.0);
  after.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", a, 3.5);
  after.add("tailcause_cpu_throttled_periods", MetricType::Counter, "", a, 51);
  after.add("tailcause_cpu_periods", MetricType::Counter, "", a, 70);
  after.add("tailcause_cpu_quota_seconds", MetricType::Gauge, "", a, 0.01);
  after.add("tailcause_cpu_period_seconds", MetricType::Gauge, "", a, 0.1);
  after.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", b, 5.0);  // no change
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.throttled.size(), 1u);
  EXPECT_EQ(d.throttled[0].cgroup, "/agents/ta");
  EXPECT_DOUBLE_EQ(d.throttled[0].throttled_seconds, 2.5);
  EXPECT_EQ(d.throttled[0].throttled_periods, 41u);
  EXPECT_EQ(d.throttled[0].periods, 50u);
  ASSERT_TRUE(d.throttled[0].quota_cpus);
  EXPECT_DOUBLE_EQ(*d.throttled[0].quota_cpus, 0.1);
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("/agents/ta  2.5 s      41 of 50           0.1 CPU"), std::string::npos)
      << text;
}

TEST(Diagnosis, NoisyNeighboursSkipSelfAndQuietPairs) {
  MetricSet before, after;
  auto pair = [](const std::string& victim, const std::string& by) {
    return Labels{{"cgroup", victim}, {"by_cgroup", by}};
  };
  after.add("tailcause_cgroup_preempted_seconds", MetricType::Counter, "", pair("/ta", "/_hog-ta"),
            4.0);
  after.add("tailcause_cgroup_preemptions", MetricType::Counter, "", pair("/ta", "/_hog-ta"), 400);
  after.add("tailcause_cgroup_preempted_seconds", MetricType::Counter, "", pair("/ta", "/ta"), 9.0);
  after.add("tailcause_cgroup_preempted_seconds", MetricType::Counter, "", pair("/tb", "/ta"), 0.5);
  before.add("tailcause_cgroup_preempted_seconds", MetricType::Counter, "", pair("/tb", "/x"), 2.0);
  after.add("tailcause_cgroup_preempted_seconds", MetricType::Counter, "", pair("/tb", "/x"), 2.0);
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.neighbours.size(), 2u);
  EXPECT_EQ(d.neighbours[0].by_cgroup, "/_hog-ta");
  EXPECT_DOUBLE_EQ(d.neighbours[0].preempted_seconds, 4.0);
  EXPECT_EQ(d.neighbours[0].preemptions, 400u);
  EXPECT_EQ(d.neighbours[1].cgroup, "/tb");
  EXPECT_EQ(d.neighbours[1].preemptions, 0u);
}

HistogramData hist(uint64_t count, double sum) {
  HistogramData h;
  h.count = count;
  h.sum = sum;
  return h;
}

TEST(Diagnosis, SlowestTcpPeersByMeanOfTheDelta) {
  MetricSet before, after;
  const Labels slow{{"local", "127.0.0.1:*"}, {"remote", "127.0.0.1:7070"}};
  const Labels fast{{"local", "10.0.0.1:*"}, {"remote", "10.0.0.2:443"}};
  const Labels rtt_only{{"local", "10.0.0.1:22"}, {"remote", "10.0.0.9:*"}};
  // Before: 10 fast connections of 1 s each; the delta must not count them.
  before.add_histogram("tailcause_tcp_connection_duration_seconds", "", slow, hist(10, 10.0));
  after.add_histogram("tailcause_tcp_connection_duration_seconds", "", slow, hist(14, 11.24));
  after.add_histogram("tailcause_tcp_connection_duration_seconds", "", fast, hist(5, 0.05));
  after.add_histogram("tailcause_tcp_rtt_seconds", "", fast, hist(5, 0.0005));
  after.add_histogram("tailcause_tcp_rtt_seconds", "", rtt_only, hist(2, 0.004));
  before.add_histogram("tailcause_tcp_rtt_seconds", "", slow, hist(3, 0.003));
  after.add_histogram("tailcause_tcp_rtt_seconds", "", slow, hist(3, 0.003));  // nothing new
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.peers.size(), 3u);
  EXPECT_EQ(d.peers[0].remote, "127.0.0.1:7070");
  EXPECT_EQ(d.peers[0].connections, 4u);
  ASSERT_TRUE(d.peers[0].mean_connection_seconds);
  EXPECT_NEAR(*d.peers[0].mean_connection_seconds, 0.31, 1e-9);
  EXPECT_FALSE(d.peers[0].mean_rtt_seconds);
  EXPECT_EQ(d.peers[1].remote, "10.0.0.2:443");
  EXPECT_NEAR(*d.peers[1].mean_rtt_seconds, 0.0001, 1e-12);
  EXPECT_EQ(d.peers[2].remote, "10.0.0.9:*");
  EXPECT_FALSE(d.peers[2].mean_connection_seconds);
}

TEST(Diagnosis, RestartedCounterCountsFromZero) {
  MetricSet before, after;
  const Labels a{{"cgroup", "/ta"}};
  before.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", a, 10.0);
  after.add("tailcause_cpu_throttled_seconds", MetricType::Counter, "", a, 0.5);
  const auto d = build_diagnosis(quota_summary(), before, after, 10.0);
  ASSERT_EQ(d.throttled.size(), 1u);
  EXPECT_DOUBLE_EQ(d.throttled[0].throttled_seconds, 0.5);
}

TEST(Diagnosis, JsonShape) {
  MetricSet before, after;
  add_glitch_counts(after, 1);
  const auto j = diagnosis_json(build_diagnosis(quota_summary(), before, after, 10.0));
  for (const char* key : {"duration_seconds", "requests", "glitches", "breaker_trips", "headline",
                          "tenants", "stages", "glitch_causes", "top_glitches", "caches",
                          "throttled_cgroups", "noisy_neighbours", "slowest_tcp_peers"})
    EXPECT_TRUE(j.contains(key)) << key;
  ASSERT_EQ(j["tenants"].size(), 2u);
  EXPECT_EQ(j["tenants"][0]["tenant"], "ta");
  EXPECT_DOUBLE_EQ(j["tenants"][0]["qps"].get<double>(), 10.0);
  EXPECT_EQ(j["tenants"][0]["verdict"]["cause"], "cpu_throttled");
  EXPECT_EQ(j["tenants"][0]["verdict"]["stage"], "generation");
  EXPECT_EQ(j["tenants"][0]["verdict"]["example"]["culprits"][0]["component"], "cpu_throttled");
  EXPECT_TRUE(j["tenants"][1]["verdict"].is_null());
  EXPECT_TRUE(j["tenants"][1]["embedding_p99_seconds"].is_null());
  EXPECT_DOUBLE_EQ(j["stages"][1]["component_seconds"]["cpu_throttled"].get<double>(), 0.9);
  EXPECT_EQ(j["stages"][1]["leading_component"], "cpu_throttled");
  EXPECT_EQ(j["top_glitches"][0]["reason"], "over_slo");
  EXPECT_DOUBLE_EQ(j["top_glitches"][0]["wall_seconds"].get<double>(), 1.2);
  EXPECT_TRUE(j["top_glitches"][0]["p99_seconds"].is_null());
}

TEST(Diagnosis, TextTablesInOrder) {
  MetricSet before, after;
  add_glitch_counts(after, 1);
  const std::string text =
      render_diagnosis_text(build_diagnosis(quota_summary(), before, after, 10.0));
  const size_t tenants = text.find("\nTenants\n"), stages = text.find("\nStages\n"),
               why = text.find("\nWhy tenants glitched\n"), top = text.find("\nTop glitches\n");
  ASSERT_NE(tenants, std::string::npos) << text;
  EXPECT_LT(tenants, stages);
  EXPECT_LT(stages, why);
  EXPECT_LT(why, top);
  EXPECT_NE(text.find("TENANT  QPS   CACHE BREAKDOWN  EMBEDDING P99"), std::string::npos) << text;
  EXPECT_NE(text.find("ta      10.0  40%              9 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("cpu_throttled 90%"), std::string::npos) << text;
  EXPECT_NE(text.find("      tool 300 ms, 95% network: peer 127.0.0.1:7070\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace tailcause::core
