// SPDX-License-Identifier: Apache-2.0
// The attribution aggregator: series per tenant/agent/stage, exemplars, folding, errors.
#include <gtest/gtest.h>

#include "core/aggregate/stage_aggregator.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

const Sample* find(const MetricSet& m, const std::string& name, const Labels& want) {
  return m.find(name, want);
}

size_t count(const MetricSet& m, const std::string& name) {
  for (const auto& f : m.families()) {
    if (f.name == name) return f.samples.size();
  }
  return 0;
}

Identity who(const std::string& tenant, const std::string& trace = "") {
  Identity id;
  id.request_id = 1;
  id.tenant = tenant;
  id.agent = "rag";
  id.trace_id = trace;
  return id;
}

StageRecord stage(const std::string& tenant, const std::string& name, uint64_t wall_ns,
                  const std::string& trace = "") {
  return testing::StageBuilder()
      .identity(who(tenant, trace))
      .stage(name)
      .kind(name == "generation" ? StageKind::generation : StageKind::other)
      .start_ns(1'000'000)
      .component(Component::on_cpu, wall_ns / 4)
      .component(Component::cpu_throttled, wall_ns - wall_ns / 4)
      .build();
}

TEST(StageAggregator, StageDurationsComponentsAndExemplars) {
  StageAggregator agg(10);
  agg.set_clock_offset(1'700'000'000);
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  agg.add(stage("tenant-a", "generation", 100'000'000, trace));  // 100 ms
  auto r = stage("tenant-a", "generation", 4'000'000);
  r.page_cache_misses = 7;
  agg.add(r);
  MetricSet m;
  agg.collect(m);

  const Sample* h = find(m, "tailcause_stage_duration_seconds",
                         {{"tenant", "tenant-a"}, {"agent", "rag"}, {"stage", "generation"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 2u);
  EXPECT_NEAR(h->histogram.sum, 0.104, 1e-9);
  ASSERT_EQ(h->histogram.exemplars.size(), h->histogram.buckets.size() + 1);
  // The 100 ms observation's exemplar sits in the first bucket whose bound is >= 100 ms.
  size_t with = 0;
  for (size_t i = 0; i < h->histogram.exemplars.size(); ++i) {
    const auto& e = h->histogram.exemplars[i];
    if (!e) continue;
    ++with;
    EXPECT_EQ(e->labels.at(0), (std::pair<std::string, std::string>{"trace_id", trace}));
    EXPECT_DOUBLE_EQ(e->value, 0.1);
    ASSERT_LT(i, h->histogram.buckets.size());
    EXPECT_GE(h->histogram.buckets[i].first, 0.1);
    if (i > 0) {
      EXPECT_LT(h->histogram.buckets[i - 1].first, 0.1);
    }
    EXPECT_NEAR(*e->timestamp, 1'700'000'000.101, 1e-3);
  }
  EXPECT_EQ(with, 1u);

  EXPECT_NEAR(find(m, "tailcause_stage_time_seconds",
                   {{"tenant", "tenant-a"}, {"component", "cpu_throttled"}})
                  ->value,
              0.075 + 0.003, 1e-9);
  // Every component has a series, zero or not.
  EXPECT_EQ(count(m, "tailcause_stage_time_seconds"), kComponents);
  EXPECT_EQ(find(m, "tailcause_stage_page_cache_misses", {{"tenant", "tenant-a"}})->value, 7);
}

// A helper's time runs in parallel with the stage that waited for it: it is reported apart
// (tailcause_stage_helper_seconds), so the stage's components still add up to its wall time.
TEST(StageAggregator, WorkerSpansAreHelperTimeNotStageTime) {
  StageAggregator agg(10);
  agg.add(stage("tenant-w", "generation", 80'000'000));  // the owner: 20 ms on CPU
  auto worker = stage("tenant-w", "generation", 50'000'000);
  worker.flags = 1;  // ATTRIB_SPAN_WORKER
  agg.add(worker);
  auto aborted = stage("tenant-w", "generation", 10'000'000);
  aborted.flags = 2;  // ATTRIB_SPAN_ABORTED
  agg.add(aborted);
  MetricSet m;
  agg.collect(m);
  const Labels on_cpu{{"tenant", "tenant-w"}, {"component", "on_cpu"}};
  double stage_total = 0;
  for (const auto& f : m.families()) {
    if (f.name != "tailcause_stage_time_seconds") continue;
    for (const auto& smp : f.samples) stage_total += smp.value;
  }
  // Owner and aborted stage only: 80 + 10 ms, not the helper's 50 ms on top.
  EXPECT_NEAR(stage_total, 0.090, 1e-9);
  EXPECT_NEAR(find(m, "tailcause_stage_time_seconds", on_cpu)->value, 0.020 + 0.0025, 1e-9);
  EXPECT_NEAR(find(m, "tailcause_stage_helper_seconds", on_cpu)->value, 0.0125, 1e-9);
  EXPECT_NEAR(find(m, "tailcause_stage_helper_seconds",
                   {{"tenant", "tenant-w"}, {"component", "cpu_throttled"}})
                  ->value,
              0.0375, 1e-9);
  EXPECT_EQ(count(m, "tailcause_stage_helper_seconds"), kComponents);
  // Only the owner and the aborted stage time the stage.
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"tenant", "tenant-w"}}), nullptr);
}

// A helper's span can end before any stage of its key did: the stage's histogram is there from
// that scrape on (count 0), beside the component counters, so a share of the components over the
// histogram's sum starts with both (a series that appears with its first value already counted
// would divide a window's components by a sum rate that missed it).
TEST(StageAggregator, TheDurationHistogramStartsWithTheComponentCounters) {
  StageAggregator agg(10);
  auto worker = stage("tenant-h", "retrieval", 5'000'000);
  worker.flags = 1;  // ATTRIB_SPAN_WORKER
  agg.add(worker);
  MetricSet m;
  agg.collect(m);
  ASSERT_EQ(count(m, "tailcause_stage_time_seconds"), kComponents);
  const auto* h = find(m, "tailcause_stage_duration_seconds", {{"tenant", "tenant-h"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 0u);
  EXPECT_EQ(h->histogram.sum, 0);
}

// Stages without helpers have no helper series.
TEST(StageAggregator, NoHelperSeriesWithoutHelpers) {
  StageAggregator agg(10);
  agg.add(stage("tenant-a", "generation", 1000));
  MetricSet m;
  agg.collect(m);
  EXPECT_EQ(count(m, "tailcause_stage_helper_seconds"), 0u);
}

TEST(StageAggregator, TenantsBeyondTopKFoldIntoOther) {
  StageAggregator agg(2);
  for (const char* t : {"a", "b", "c", "d"}) agg.add(stage(t, "generation", 1000));
  agg.add(stage("c", "generation", 1000));
  MetricSet m;
  agg.collect(m);
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"tenant", "a"}}), nullptr);
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"tenant", "b"}}), nullptr);
  EXPECT_EQ(find(m, "tailcause_stage_duration_seconds", {{"tenant", "c"}}), nullptr);
  const Sample* other = find(m, "tailcause_stage_duration_seconds", {{"tenant", kOtherLabel}});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->histogram.count, 3u);
  EXPECT_EQ(agg.folded(), 2u);  // c and d, each counted once
}

TEST(StageAggregator, FreeStageNamesAreBoundedFixedOnesAreNot) {
  StageAggregator agg(1);
  agg.add(stage("t", "rerank", 1000));
  agg.add(stage("t", "summarise", 1000));
  agg.add(stage("t", "generation", 1000));
  MetricSet m;
  agg.collect(m);
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"stage", "rerank"}}), nullptr);
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"stage", kOtherLabel}}), nullptr);
  EXPECT_NE(find(m, "tailcause_stage_duration_seconds", {{"stage", "generation"}}), nullptr);
}

TEST(StageAggregator, RequestsOutcomesAndTokenTimes) {
  StageAggregator agg(10);
  RequestRecord r;
  r.id = who("tenant-r", "0af7651916cd43dd8448eb211c80319c");
  r.start_ns = 0;
  r.end_ns = 2'000'000'000;
  r.tokens = 5;
  r.first_token_ns = 300'000'000;
  r.last_token_ns = 700'000'000;
  agg.add(r);
  r.status = 3;
  agg.add(r);
  MetricSet m;
  agg.collect(m);
  EXPECT_EQ(find(m, "tailcause_requests", {{"tenant", "tenant-r"}, {"status", "ok"}})->value, 1);
  EXPECT_EQ(find(m, "tailcause_requests", {{"tenant", "tenant-r"}, {"status", "error"}})->value, 1);
  const Sample* d = find(m, "tailcause_request_duration_seconds", {{"tenant", "tenant-r"}});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->histogram.count, 2u);
  const Sample* ttft = find(m, "tailcause_time_to_first_token_seconds", {{"tenant", "tenant-r"}});
  ASSERT_NE(ttft, nullptr);
  EXPECT_NEAR(ttft->histogram.sum, 0.6, 1e-9);
  const Sample* tpot = find(m, "tailcause_time_per_output_token_seconds", {{"tenant", "tenant-r"}});
  ASSERT_NE(tpot, nullptr);
  EXPECT_NEAR(tpot->histogram.sum, 0.2, 1e-9);  // (0.7 - 0.3) / 4, twice
}

TEST(StageAggregator, CacheLookupsAndHitAges) {
  StageAggregator agg(10);
  CacheRecord c;
  c.id = who("tenant-c");
  c.cache = "vectors";
  for (int result : {0, 0, 1, 2}) {
    c.result = result;
    c.age_ns = 5'000'000'000;
    agg.add(c);
  }
  MetricSet m;
  agg.collect(m);
  auto lookups = [&](const char* result) {
    return find(m, "tailcause_cache_lookups", {{"cache", "vectors"}, {"result", result}})->value;
  };
  EXPECT_EQ(lookups("hit"), 2);
  EXPECT_EQ(lookups("miss"), 1);
  EXPECT_EQ(lookups("stale"), 1);
  const Sample* age = find(m, "tailcause_cache_hit_age_seconds", {{"cache", "vectors"}});
  ASSERT_NE(age, nullptr);
  EXPECT_EQ(age->histogram.count, 3u);  // hits and stale hits, not the miss
}

// The cache library's actions: counted per action; entries summed except for rebalances, whose
// count is the quota they set (a gauge); a cache with no action has no action series.
TEST(StageAggregator, CacheActionsEntriesAndQuota) {
  StageAggregator agg(10);
  auto action = [&](int a, uint64_t count) {
    CacheActionRecord r;
    r.tenant = "tenant-c";
    r.cache = "vectors";
    r.action = a;
    r.count = count;
    agg.add(r);
  };
  action(0, 64);  // warm-up of 64 entries
  action(4, 5);   // evictions
  action(4, 7);
  action(1, 1 << 20);  // rebalanced to 1 MiB
  action(1, 3 << 20);  // then 3 MiB
  action(3, 1);
  CacheRecord other;
  other.id = who("tenant-d");
  other.cache = "vectors";
  agg.add(other);
  MetricSet m;
  agg.collect(m);
  auto value = [&](const char* name, const char* a) {
    const Sample* s = find(m, name, {{"tenant", "tenant-c"}, {"action", a}});
    return s ? s->value : -1.0;
  };
  EXPECT_EQ(value("tailcause_cache_actions", "warmup"), 1);
  EXPECT_EQ(value("tailcause_cache_actions", "evict"), 2);
  EXPECT_EQ(value("tailcause_cache_actions", "rebalance"), 2);
  EXPECT_EQ(value("tailcause_cache_actions", "invalidate"), 0);
  EXPECT_EQ(value("tailcause_cache_action_entries", "warmup"), 64);
  EXPECT_EQ(value("tailcause_cache_action_entries", "evict"), 12);
  EXPECT_EQ(value("tailcause_cache_action_entries", "reject"), 1);
  EXPECT_EQ(value("tailcause_cache_action_entries", "rebalance"), -1) << "a quota is not entries";
  const Sample* quota = find(m, "tailcause_cache_quota_bytes", {{"tenant", "tenant-c"}});
  ASSERT_NE(quota, nullptr);
  EXPECT_EQ(quota->value, 3 << 20);
  EXPECT_EQ(find(m, "tailcause_cache_actions", {{"tenant", "tenant-d"}}), nullptr);
  EXPECT_EQ(find(m, "tailcause_cache_quota_bytes", {{"tenant", "tenant-d"}}), nullptr);
}

TEST(StageAggregator, EntropyHistogram) {
  StageAggregator agg(10);
  for (double e : {0.02, 1.2, 1.2, 20.0}) agg.add(QualityRecord{who("tenant-q"), e});
  MetricSet m;
  agg.collect(m);
  const Sample* h = find(m, "tailcause_output_entropy", {{"tenant", "tenant-q"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 4u);
  EXPECT_EQ(h->histogram.buckets.front().second, 1u);  // <= 0.05
  EXPECT_EQ(h->histogram.buckets.back().second, 3u);   // <= 10: all but 20
}

TEST(StageAggregator, ErrorsMergeKernelAndUserCountsOncePerRequest) {
  StageAggregator agg(10);
  agg.set_kernel_errors({{"stage_end_without_begin", 3}, {"bad_trace_id", 1}});
  RequestRecord r;
  r.id = who(kInvalidLabel);
  r.id.invalid_utf8 = true;
  r.id.bad_trace_id = true;
  agg.add(r);
  auto s = stage(kInvalidLabel, "generation", 10);
  s.id.invalid_utf8 = true;
  agg.add(s);  // the request's stages do not count it again
  agg.count_error(kErrorRequestNotEnded, 2);
  MetricSet m;
  agg.collect(m);
  auto errors = [&](const char* kind) {
    return find(m, "tailcause_sdk_errors", {{"kind", kind}})->value;
  };
  EXPECT_EQ(errors("stage_end_without_begin"), 3);
  EXPECT_EQ(errors("bad_trace_id"), 2);
  EXPECT_EQ(errors("invalid_utf8"), 1);
  EXPECT_EQ(errors("request_not_ended"), 2);
  EXPECT_EQ(errors("exit_mid_stage"), 0);  // every kind is exported
}

TEST(StageAggregator, LayersFoldAndStayMonotonic) {
  StageAggregator agg(1);
  LayerTotals t;
  t.slots[20] = 3;
  t.sum_ns = 3u << 20;
  agg.set_layers({{{0, 8}, t}, {{1, 8}, t}});
  MetricSet m;
  agg.collect(m);
  const Sample* kept =
      find(m, "tailcause_layer_duration_seconds", {{"layer", "0"}, {"batch_size", "8"}});
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->histogram.count, 3u);
  const Sample* other = find(m, "tailcause_layer_duration_seconds", {{"layer", kOtherLabel}});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->histogram.count, 3u);
  // The folded pair disappears from the kernel map: "__other__" keeps its count.
  agg.set_layers({{{0, 8}, t}});
  MetricSet again;
  agg.collect(again);
  EXPECT_EQ(
      find(again, "tailcause_layer_duration_seconds", {{"layer", kOtherLabel}})->histogram.count,
      3u);
}

}  // namespace
}  // namespace tailcause::core

namespace tailcause::core {
namespace {

// A stage of `tenant` named `name` that ends at `end_ms` and took `wall_ms` on CPU.
StageRecord named_stage(const std::string& tenant, const std::string& name, uint64_t end_ms,
                        uint64_t wall_ms) {
  return testing::StageBuilder()
      .identity(who(tenant))
      .stage(name)
      .kind(StageKind::other)
      .end_ms(end_ms)
      .component(Component::on_cpu, wall_ms * testing::StageBuilder::kMs)
      .build();
}

uint64_t stage_count(const MetricSet& m, const std::string& tenant, const std::string& agent,
                     const std::string& name) {
  const Sample* h = m.find("tailcause_stage_duration_seconds",
                           {{"tenant", tenant}, {"agent", agent}, {"stage", name}});
  return h ? h->histogram.count : 0;
}

double family_value(const MetricSet& m, const std::string& metric, const std::string& family) {
  const Sample* s = m.find(metric, {{"family", family}});
  return s ? s->value : -1;
}

TEST(StageAggregatorSeriesBudget, NewCombinationsPastTheLimitGoToOneOverflowSeries) {
  StageAggregator agg(100, SeriesLimits{.stage = 3});
  for (int i = 0; i < 10; ++i) agg.add(named_stage("t", "s" + std::to_string(i), 1, 1));
  MetricSet m;
  agg.collect(m);
  EXPECT_EQ(count(m, "tailcause_stage_duration_seconds"), 4u);  // three and the overflow
  for (int i = 0; i < 3; ++i) EXPECT_EQ(stage_count(m, "t", "rag", "s" + std::to_string(i)), 1u);
  EXPECT_EQ(stage_count(m, kOtherLabel, kOtherLabel, kOtherLabel), 7u);
  EXPECT_EQ(family_value(m, "tailcause_series_folded", "stage"), 7);
  EXPECT_EQ(family_value(m, "tailcause_series", "stage"), 3);
  EXPECT_EQ(family_value(m, "tailcause_series_limit", "stage"), 3);
  EXPECT_EQ(family_value(m, "tailcause_series_folded", "request"), 0);
  // The per-label budgets folded nothing: only their product was bounded.
  EXPECT_EQ(agg.folded(), 0u);
}

TEST(StageAggregatorSeriesBudget, TheHeaviestCombinationsKeepTheirSeriesAndNothingIsLost) {
  StageAggregator agg(100, SeriesLimits{.stage = 2});
  agg.add(named_stage("t", "light", 1, 1));
  agg.add(named_stage("t", "steady", 1, 50));
  uint64_t end_ms = 1;
  // A heavy combination arrives once the family is full: folded at first, then, at the first
  // rebalance, it takes the light one's place.
  for (int i = 0; i < 30; ++i) {
    end_ms += 1000;
    agg.add(named_stage("t", "heavy", end_ms, 100));
    agg.add(named_stage("t", "steady", end_ms, 50));
  }
  MetricSet m;
  agg.collect(m);
  EXPECT_GT(stage_count(m, "t", "rag", "heavy"), 0u);
  EXPECT_EQ(stage_count(m, "t", "rag", "steady"), 31u);
  EXPECT_EQ(stage_count(m, "t", "rag", "light"), 0u);  // merged into the overflow
  const uint64_t overflow = stage_count(m, kOtherLabel, kOtherLabel, kOtherLabel);
  EXPECT_EQ(overflow + stage_count(m, "t", "rag", "heavy") + 31u, 62u);
  EXPECT_EQ(family_value(m, "tailcause_series_folded", "stage"), static_cast<double>(overflow));
  // The light stage's time moved with it: the components still add up over all series.
  double on_cpu = 0;
  for (const auto& f : m.families()) {
    if (f.name != "tailcause_stage_time_seconds") continue;
    for (const auto& s : f.samples) on_cpu += s.value;
  }
  EXPECT_NEAR(on_cpu, 0.001 + 31 * 0.050 + 30 * 0.100, 1e-9);
}

TEST(StageAggregatorSeriesBudget, RequestAndCacheFamiliesHaveTheirOwnLimits) {
  StageAggregator agg(100, SeriesLimits{.stage = 100, .request = 1, .cache = 1});
  for (const char* tenant : {"a", "b", "c"}) {
    RequestRecord r;
    r.id = who(tenant);
    r.start_ns = 0;
    r.end_ns = 5'000'000;
    agg.add(r);
    CacheRecord c;
    c.id = who(tenant);
    c.cache = "kv";
    c.result = 0;
    agg.add(c);
  }
  MetricSet m;
  agg.collect(m);
  EXPECT_EQ(count(m, "tailcause_request_duration_seconds"), 2u);
  EXPECT_EQ(family_value(m, "tailcause_series_folded", "request"), 2);
  EXPECT_EQ(family_value(m, "tailcause_series_folded", "cache"), 2);
  const Sample* other =
      m.find("tailcause_cache_lookups",
             {{"tenant", kOtherLabel}, {"cache", kOtherLabel}, {"result", "hit"}});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->value, 2);
}

}  // namespace
}  // namespace tailcause::core
