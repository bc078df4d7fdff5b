// SPDX-License-Identifier: Apache-2.0
// Root tests of the kernel anomaly stamps: a thread under a real CPU quota reports output
// quality right after being throttled, and its quality records carry that stall; an unloaded
// thread's records carry no throttling. The entropy detector joins the two on real records.
#include "attrib_fixture.h"

#include "core/detect/entropy_spike.h"

namespace tailcause::testing {
namespace {

constexpr uint64_t kMs = 1'000'000;

class AttribAnomalyTest : public AttribTest {
 protected:
  void SetUp() override {
    AttribTest::SetUp();
    if (IsSkipped() || !probe) return;
    // The fixture's records, plus quality and cache records of this test's targets.
    probe->set_observer([this](const core::Record& r) {
      if (auto* s = std::get_if<StageRecord>(&r); s && targets.count(s->id.pid))
        stages.push_back(*s);
      if (auto* q = std::get_if<core::RequestRecord>(&r); q && targets.count(q->id.pid)) {
        requests.push_back(*q);
      }
      if (auto* q = std::get_if<core::QualityRecord>(&r); q && targets.count(q->id.pid)) {
        qualities.push_back(*q);
      }
      if (auto* c = std::get_if<core::CacheRecord>(&r); c && targets.count(c->id.pid)) {
        caches.push_back(*c);
      }
    });
  }

  std::vector<core::QualityRecord> qualities_of(uint64_t request_id) const {
    std::vector<core::QualityRecord> out;
    for (const auto& q : qualities) {
      if (q.id.request_id == request_id) out.push_back(q);
    }
    return out;
  }
  const core::RequestRecord* request(uint64_t id) const {
    for (const auto& r : requests) {
      if (r.id.request_id == id) return &r;
    }
    return nullptr;
  }

  std::vector<core::QualityRecord> qualities;
  std::vector<core::CacheRecord> caches;
};

std::string describe(const std::optional<core::KernelAnomaly>& a, uint64_t at_ns) {
  if (!a) return "none";
  return a->kind + " " + std::to_string(a->duration_ns / 1e6) + " ms, ended " +
         std::to_string((static_cast<double>(at_ns) - static_cast<double>(a->end_ns)) / 1e6) +
         " ms before";
}

// Recent: ended at most `ms` before the output (and not after it: a stamp is in the past).
bool recent(const std::optional<core::KernelAnomaly>& a, uint64_t at_ns, uint64_t ms) {
  return a && a->end_ns <= at_ns && at_ns - a->end_ns <= ms * kMs;
}

TEST_F(AttribAnomalyTest, QualityRecordsCarryTheThrottlingOfTheirThread) {
  TestCgroup limited("attrib-anomaly");
  limited.set_cpu_quota(0.1);
  probe->start(ctx);
  // 60 outputs, one per ms of CPU, at 10% of a CPU: throttled for ~90 ms every ~10 outputs.
  const std::string printed =
      run_target({"entropy", "0xA01", "attrib-throttled", "60", "1", "40", "1"}, &limited);
  // The same outputs in the open, one per 1 ms sleep.
  run_target({"entropy", "0xA02", "attrib-unloaded", "60", "0", "40", "0"});
  EXPECT_EQ(printed.find("stalled_ms=0.0"), std::string::npos) << "never throttled: " << printed;

  const auto loaded = qualities_of(0xA01), free = qualities_of(0xA02);
  ASSERT_EQ(loaded.size(), 60u);
  ASSERT_EQ(free.size(), 60u);
  const bool verbose = getenv("ATTRIB_VERBOSE") != nullptr;

  const core::RequestRecord* req = request(0xA01);
  ASSERT_NE(req, nullptr);
  int throttled_recent = 0, stamped = 0;
  uint64_t previous = 0;
  for (const auto& q : loaded) {
    if (verbose) std::cout << "[ quality  ] " << describe(q.thread_anomaly, q.time_ns) << "\n";
    EXPECT_DOUBLE_EQ(q.entropy, q.entropy > 1.5 ? 2.0 : 1.0);
    EXPECT_GE(q.time_ns, req->start_ns);
    EXPECT_LE(q.time_ns, req->end_ns);
    EXPECT_GT(q.time_ns, previous);
    previous = q.time_ns;
    if (!q.thread_anomaly) continue;
    ++stamped;
    EXPECT_LE(q.thread_anomaly->end_ns, q.time_ns) << "stamped when the stall ended, before";
    // One thread: the process's last anomaly is its own, or a later one.
    ASSERT_TRUE(q.process_anomaly);
    EXPECT_GE(q.process_anomaly->end_ns, q.thread_anomaly->end_ns);
    const bool stall =
        q.thread_anomaly->kind == "cpu_throttled" || q.thread_anomaly->kind == "runqueue";
    if (stall) {
      EXPECT_GE(q.thread_anomaly->duration_ns, 1 * kMs) << "below anomaly_min_ns";
    }
    throttled_recent += q.thread_anomaly->kind == "cpu_throttled" &&
                        q.thread_anomaly->duration_ns >= 20 * kMs &&
                        recent(q.thread_anomaly, q.time_ns, 5);
  }
  EXPECT_GT(stamped, 30) << "after the first throttling every record carries one";
  // Each ~100 ms period starts with outputs right after the throttled stretch: 6 periods.
  EXPECT_GE(throttled_recent, 3);
  // The spike's first output came right after a throttled stretch, which its record carries.
  ASSERT_TRUE(recent(loaded[40].thread_anomaly, loaded[40].time_ns, 2))
      << describe(loaded[40].thread_anomaly, loaded[40].time_ns);
  EXPECT_TRUE(loaded[40].thread_anomaly->kind == "cpu_throttled" ||
              loaded[40].thread_anomaly->kind == "runqueue")  // preempted since, on a busy machine
      << describe(loaded[40].thread_anomaly, loaded[40].time_ns);

  int free_recent = 0;
  for (const auto& q : free) {
    if (q.thread_anomaly) {
      EXPECT_NE(q.thread_anomaly->kind, "cpu_throttled") << "no quota, no throttling";
      EXPECT_LE(q.thread_anomaly->end_ns, q.time_ns);
    }
    free_recent += recent(q.thread_anomaly, q.time_ns, 5);
  }
  std::cout << "[ figures  ] quality records with a stall <= 5 ms before them: " << throttled_recent
            << " of 60 throttled (cpu_throttled >= 20 ms), " << free_recent
            << " of 60 unloaded (any kind; the machine is shared)\n";

  // The entropy detector joins the spike to the stall on the real records.
  for (uint64_t id : {0xA01, 0xA02}) {
    core::EntropySpikeDetector detector(config.entropy);
    std::vector<core::Glitch> glitches;
    for (const auto& q : qualities_of(id)) {
      if (auto g = detector.observe(q)) glitches.push_back(*g);
    }
    ASSERT_EQ(glitches.size(), 1u) << "request " << id;
    const core::Glitch& g = glitches[0];
    std::cout << "[ figures  ] " << g.tenant << ": " << g.verdict.evidence << "\n";
    EXPECT_EQ(g.cause, "entropy_spike");
    EXPECT_EQ(g.stage, "generation");
    EXPECT_EQ(g.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(g.start_ns, qualities_of(id)[40].time_ns);
    EXPECT_EQ(g.end_ns, qualities_of(id)[42].time_ns);
    EXPECT_EQ(g.verdict.evidence.rfind("entropy 2.00 vs baseline 1.00 (+100%) over 3 outputs; ", 0),
              0u)
        << g.verdict.evidence;
    if (id == 0xA01) {
      // The throttled stretch just before the first spike output, unless the shared machine
      // preempted the thread for 1 ms or more even closer to one of the spike's outputs.
      EXPECT_NE(g.verdict.evidence.find(" stall "), std::string::npos) << g.verdict.evidence;
      EXPECT_NE(g.verdict.evidence.find("on the same thread"), std::string::npos)
          << g.verdict.evidence;
      ASSERT_EQ(g.verdict.culprits.size(), 1u);
      EXPECT_TRUE(g.verdict.culprits[0].component == Component::cpu_throttled ||
                  g.verdict.culprits[0].component == Component::runqueue)
          << g.verdict.evidence;
    } else {
      EXPECT_EQ(g.verdict.evidence.find("cpu_throttled"), std::string::npos) << g.verdict.evidence;
    }
    detector.end_request(g.pid, id);
    EXPECT_EQ(detector.requests(), 0u);
  }
}

// Cache lookups carry the time they were reported.
TEST_F(AttribAnomalyTest, CacheRecordsCarryTheirTime) {
  probe->start(ctx);
  run_target({"llm", "0xA03", "attrib-cache-time"});
  const core::RequestRecord* req = request(0xA03);
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(caches.size(), 3u);
  uint64_t previous = req->start_ns;
  for (const auto& c : caches) {
    EXPECT_GE(c.time_ns, previous);
    EXPECT_LE(c.time_ns, req->end_ns);
    previous = c.time_ns;
  }
  ASSERT_EQ(qualities.size(), 1u);  // llm mode reports its output's entropy once
  EXPECT_GT(qualities[0].time_ns, caches.back().time_ns);
  EXPECT_LT(qualities[0].time_ns, req->end_ns);
}

}  // namespace
}  // namespace tailcause::testing
