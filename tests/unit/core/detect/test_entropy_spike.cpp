// SPDX-License-Identifier: Apache-2.0
// Output-entropy spikes per request: the baseline, the spike rule, one glitch per run, the
// correlation with kernel anomalies within the window, and freeing per-request state.
#include <gtest/gtest.h>

#include <vector>

#include "core/detect/entropy_spike.h"

namespace tailcause::core {
namespace {

constexpr uint64_t kMs = 1'000'000;

QualityRecord output(double entropy, uint64_t at_ns, uint64_t request = 1, uint32_t pid = 40) {
  QualityRecord r;
  r.id.tenant = "t-782";
  r.id.agent = "writer";
  r.id.pid = pid;
  r.id.request_id = request;
  r.id.trace_id = "0af7651916cd43dd8448eb211c80319c";
  r.entropy = entropy;
  r.time_ns = at_ns;
  return r;
}

KernelAnomaly anomaly(const char* kind, uint64_t end_ns, uint64_t duration_ns) {
  return KernelAnomaly{end_ns, duration_ns, kind};
}

EntropySettings defaults() { return EntropySettings{0.4, 3, 5}; }

// Feeds outputs; returns the indexes at which a glitch came out, and the glitches.
struct Fed {
  std::vector<size_t> at;
  std::vector<Glitch> glitches;
};
Fed feed(EntropySpikeDetector& d, const std::vector<QualityRecord>& rs) {
  Fed f;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (auto g = d.observe(rs[i])) {
      f.at.push_back(i);
      f.glitches.push_back(*g);
    }
  }
  return f;
}
std::vector<QualityRecord> series(const std::vector<double>& entropies, uint64_t start_ns = 0,
                                  uint64_t step_ns = 10 * kMs, uint64_t request = 1) {
  std::vector<QualityRecord> rs;
  for (size_t i = 0; i < entropies.size(); ++i) {
    rs.push_back(output(entropies[i], start_ns + (i + 1) * step_ns, request));
  }
  return rs;
}

TEST(EntropySpike, ThreeConsecutiveHighOutputsAreOneSpike) {
  EntropySpikeDetector d(defaults());
  const auto f = feed(d, series({1, 1, 1, 1.5, 1.5, 1.5, 1.5, 1.6, 1, 1.5, 1.5, 1.5}));
  ASSERT_EQ(f.at, (std::vector<size_t>{5, 11})) << "once per run of high outputs";
  const Glitch& g = f.glitches[0];
  EXPECT_EQ(g.stage, "generation");
  EXPECT_EQ(g.cause, "entropy_spike");
  EXPECT_EQ(g.tenant, "t-782");
  EXPECT_EQ(g.agent, "writer");
  EXPECT_EQ(g.trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(g.pid, 40u);
  EXPECT_EQ(g.request_id, 1u);
  EXPECT_EQ(g.start_ns, 40 * kMs);
  EXPECT_EQ(g.end_ns, 60 * kMs);
  EXPECT_TRUE(g.verdict.culprits.empty());
  EXPECT_EQ(g.verdict.evidence,
            "entropy 1.50 vs baseline 1.00 (+50%) over 3 outputs; no kernel anomaly within 5 ms");
  // The spike's outputs never joined the baseline: the second is judged against 1.00 too.
  EXPECT_EQ(f.glitches[1].verdict.evidence,
            "entropy 1.50 vs baseline 1.00 (+50%) over 3 outputs; no kernel anomaly within 5 ms");
  EXPECT_EQ(d.spikes(), 2u);
}

TEST(EntropySpike, ARiseBelowTheThresholdIsNoSpike) {
  EntropySpikeDetector d(defaults());
  EXPECT_TRUE(feed(d, series({1, 1, 1, 1.39, 1.39, 1.39, 1.39})).at.empty());
  EntropySpikeDetector exactly(EntropySettings{0.5, 3, 5});  // 1.5 is exact in binary
  EXPECT_EQ(feed(exactly, series({1, 1, 1, 1.5, 1.5, 1.5})).at, (std::vector<size_t>{5}));
  EntropySpikeDetector just_below(EntropySettings{0.5, 3, 5});
  EXPECT_TRUE(feed(just_below, series({1, 1, 1, 1.49, 1.49, 1.49})).at.empty());
}

TEST(EntropySpike, NothingIsJudgedBeforeThreeOutputsOfBaseline) {
  EntropySpikeDetector d(defaults());
  // The first three (1, 1, 2) are the baseline, 1.33; then 2 >= 1.87 three times.
  const auto f = feed(d, series({1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(f.at, (std::vector<size_t>{5}));
  EXPECT_NE(f.glitches[0].verdict.evidence.find("entropy 2.00 vs baseline 1.33 (+50%)"),
            std::string::npos)
      << f.glitches[0].verdict.evidence;
}

TEST(EntropySpike, AShortRunJoinsTheBaseline) {
  EntropySpikeDetector d(defaults());
  // 2, 2 is too short to be a spike: the baseline becomes (1+1+1+2+2+1)/6 = 1.33.
  const auto f = feed(d, series({1, 1, 1, 2, 2, 1, 2, 2, 2}));
  ASSERT_EQ(f.at, (std::vector<size_t>{8}));
  EXPECT_NE(f.glitches[0].verdict.evidence.find("entropy 2.00 vs baseline 1.33 (+50%)"),
            std::string::npos)
      << f.glitches[0].verdict.evidence;
}

TEST(EntropySpike, AZeroBaselineNeedsARealRise) {
  EntropySpikeDetector d(defaults());
  const auto f = feed(d, series({0, 0, 0, 0, 0, 0, 1, 1, 1}));
  ASSERT_EQ(f.at, (std::vector<size_t>{8}));
  EXPECT_NE(f.glitches[0].verdict.evidence.find("entropy 1.00 vs baseline 0.00 (from 0)"),
            std::string::npos)
      << f.glitches[0].verdict.evidence;
}

TEST(EntropySpike, AStallOnTheSameThreadWithinTheWindowIsNamed) {
  EntropySpikeDetector d(defaults());
  auto rs = series({1, 1, 1, 2, 2, 2}, 60 * kMs);  // spike outputs at 100, 110, 120 ms
  // Stamped on the second spike output's record: ended 1.3 ms before it.
  rs[4].thread_anomaly = anomaly("runqueue", 108'700'000, 4'200'000);
  rs[4].process_anomaly = rs[4].thread_anomaly;  // the same event: not named twice
  rs[5].thread_anomaly = rs[4].thread_anomaly;
  const auto f = feed(d, rs);
  ASSERT_EQ(f.at.size(), 1u);
  const Glitch& g = f.glitches[0];
  EXPECT_EQ(g.verdict.evidence,
            "entropy 2.00 vs baseline 1.00 (+100%) over 3 outputs; runqueue stall 4.2 ms on the "
            "same thread 1.3 ms before");
  EXPECT_EQ(g.cause, "entropy_spike");
  ASSERT_EQ(g.verdict.culprits.size(), 1u);
  EXPECT_EQ(g.verdict.culprits[0].component, Component::runqueue);
  EXPECT_EQ(g.verdict.culprits[0].ns, 4'200'000u);
}

TEST(EntropySpike, AnAnomalyOutsideTheWindowIsNotJoined) {
  EntropySpikeDetector d(defaults());
  auto rs = series({1, 1, 1, 2, 2, 2}, 60 * kMs);
  // 5.1 ms before the first spike output, and old news for the baseline outputs.
  for (auto& r : rs) r.thread_anomaly = anomaly("cpu_throttled", 94'900'000, 80 * kMs);
  rs[2].thread_anomaly = anomaly("runqueue", 89 * kMs, 2 * kMs);  // near a baseline output only
  const auto f = feed(d, rs);
  ASSERT_EQ(f.at.size(), 1u);
  EXPECT_EQ(f.glitches[0].verdict.evidence,
            "entropy 2.00 vs baseline 1.00 (+100%) over 3 outputs; no kernel anomaly within 5 ms");
  EXPECT_TRUE(f.glitches[0].verdict.culprits.empty());

  // Exactly at the edge of the window is inside.
  EntropySpikeDetector edge(defaults());
  for (auto& r : rs) r.thread_anomaly = anomaly("cpu_throttled", 95 * kMs, 80 * kMs);
  EXPECT_NE(feed(edge, rs).glitches.at(0).verdict.evidence.find(
                "cpu_throttled stall 80 ms on the same thread 5 ms before"),
            std::string::npos);
}

TEST(EntropySpike, AnotherThreadsStallAfterAnOutputCountsAsTheSameProcess) {
  EntropySpikeDetector d(defaults());
  auto rs = series({1, 1, 1, 2, 2, 2}, 60 * kMs);  // 100, 110, 120 ms
  // A helper thread was throttled until 112 ms: after the second output, carried by the third.
  rs[5].process_anomaly = anomaly("cpu_throttled", 112 * kMs, 40 * kMs);
  rs[5].thread_anomaly = anomaly("block_io", 50 * kMs, 3 * kMs);  // long ago
  const auto f = feed(d, rs);
  ASSERT_EQ(f.at.size(), 1u);
  EXPECT_NE(f.glitches[0].verdict.evidence.find(
                "cpu_throttled stall 40 ms in the same process 2 ms after"),
            std::string::npos)
      << f.glitches[0].verdict.evidence;
  EXPECT_EQ(f.glitches[0].verdict.culprits.at(0).component, Component::cpu_throttled);
}

TEST(EntropySpike, TheNearestAnomalyIsNamedAndTheThreadsWinsATie) {
  EntropySpikeDetector d(defaults());
  auto rs = series({1, 1, 1, 2, 2, 2}, 60 * kMs);
  rs[3].thread_anomaly = anomaly("runqueue", 97 * kMs, 2 * kMs);   // 3 ms before 100 ms
  rs[3].process_anomaly = anomaly("block_io", 99 * kMs, 6 * kMs);  // 1 ms before
  auto f = feed(d, rs);
  EXPECT_NE(
      f.glitches.at(0).verdict.evidence.find("block_io stall 6 ms in the same process 1 ms before"),
      std::string::npos)
      << f.glitches[0].verdict.evidence;

  EntropySpikeDetector tie(defaults());
  rs[3].process_anomaly = anomaly("block_io", 103 * kMs, 6 * kMs);  // 3 ms after 100 ms
  f = feed(tie, rs);
  EXPECT_NE(
      f.glitches.at(0).verdict.evidence.find("runqueue stall 2 ms on the same thread 3 ms before"),
      std::string::npos)
      << f.glitches[0].verdict.evidence;
}

TEST(EntropySpike, AMajorFaultIsNamedWithoutACulprit) {
  EntropySpikeDetector d(defaults());
  auto rs = series({1, 1, 1, 2, 2, 2}, 60 * kMs);
  rs[5].thread_anomaly = anomaly(kMajorFaultAnomaly, 119'500'000, 0);
  const auto f = feed(d, rs);
  EXPECT_NE(f.glitches.at(0).verdict.evidence.find("major fault on the same thread 500 us before"),
            std::string::npos)
      << f.glitches[0].verdict.evidence;
  EXPECT_TRUE(f.glitches[0].verdict.culprits.empty());
}

TEST(EntropySpike, RequestsAreSeparateAndTheirEndFreesTheirState) {
  EntropySpikeDetector d(defaults());
  // Interleaved: request 2's low outputs do not break request 1's run.
  for (double e : {1.0, 1.0, 1.0, 2.0, 2.0}) {
    EXPECT_FALSE(d.observe(output(e, kMs, 1)));
    EXPECT_FALSE(d.observe(output(1.0, kMs, 2)));
  }
  EXPECT_FALSE(d.observe(output(1.0, kMs, 1, 41)));  // same request id, another process
  EXPECT_EQ(d.requests(), 3u);
  EXPECT_TRUE(d.observe(output(2.0, kMs, 1)));

  d.end_request(40, 1);
  EXPECT_EQ(d.requests(), 2u);
  // A request seen again after its end starts over: three outputs of baseline first.
  for (double e : {2.0, 2.0, 2.0}) EXPECT_FALSE(d.observe(output(e, kMs, 1)));
  d.end_request(40, 999);  // unknown: nothing happens
  EXPECT_EQ(d.requests(), 3u);
  d.end_process(40);
  EXPECT_EQ(d.requests(), 1u);  // only the other process's request is left
  d.end_process(41);
  EXPECT_EQ(d.requests(), 0u);
}

TEST(EntropySpike, TheLeastRecentRequestIsEvictedAtTheBound) {
  EntropySpikeDetector d(defaults(), 2);
  for (double e : {1.0, 1.0, 1.0, 2.0, 2.0}) EXPECT_FALSE(d.observe(output(e, kMs, 1)));
  d.observe(output(1.0, kMs, 2));
  EXPECT_TRUE(d.observe(output(2.0, kMs, 1))) << "request 1 spikes";
  d.observe(output(1.0, kMs, 3));  // request 2 is the least recent
  EXPECT_EQ(d.requests(), 2u);
  EXPECT_EQ(d.evicted(), 1u);
  // Request 1 kept its state: one more high output is the same, already reported, run.
  EXPECT_FALSE(d.observe(output(2.0, kMs, 1)));
  // Request 2 starts over.
  for (double e : {3.0, 3.0, 3.0}) EXPECT_FALSE(d.observe(output(e, kMs, 2)));
  EXPECT_EQ(d.evicted(), 2u);
}

TEST(EntropySpike, RefusesANonPositiveRise) {
  EXPECT_THROW(EntropySpikeDetector(EntropySettings{0.0, 3, 5}), std::invalid_argument);
  EntropySpikeDetector one(EntropySettings{0.4, 1, 5});  // one high output is a spike
  EXPECT_EQ(feed(one, series({1, 1, 1, 2})).at, (std::vector<size_t>{3}));
}

}  // namespace
}  // namespace tailcause::core
