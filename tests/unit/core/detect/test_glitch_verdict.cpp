// SPDX-License-Identifier: Apache-2.0
// Verdicts for each fault, from synthetic records against a learned normal profile.
#include <gtest/gtest.h>

#include "core/detect/verdict.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

StageRecord record(const std::string& stage,
                   std::initializer_list<std::pair<Component, uint64_t>> parts) {
  testing::StageBuilder b;
  b.tenant("acme").agent("rag").stage(stage).start_ns(1'000 * ms);
  for (auto [c, ns] : parts) b.component(c, ns);
  return b.build();
}

// A normal stage: mostly on CPU with a little of everything.
ComponentProfile normal_profile(const std::string& stage, uint64_t scale_ms) {
  ComponentProfile p;
  for (int i = 0; i < 100; i++) {
    p.add(record(stage, {{Component::on_cpu, 60 * scale_ms * ms / 100},
                         {Component::runqueue, 10 * scale_ms * ms / 100},
                         {Component::block_io, 10 * scale_ms * ms / 100},
                         {Component::network, 15 * scale_ms * ms / 100},
                         {Component::unattributed, 5 * scale_ms * ms / 100}}));
  }
  return p;
}

TEST(VerdictFormat, DurationsAndCounts) {
  EXPECT_EQ(format_duration(1'420 * ms), "1.42 s");
  EXPECT_EQ(format_duration(480 * ms), "480 ms");
  EXPECT_EQ(format_duration(2'100 * ms), "2.1 s");
  EXPECT_EQ(format_duration(999'700'000), "1 s");
  EXPECT_EQ(format_duration(35'000), "35 us");
  EXPECT_EQ(format_count(1240), "1,240");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1'234'567), "1,234,567");
}

TEST(VerdictProfile, LearnsMeanFractionsAndWall) {
  ComponentProfile p = normal_profile("generation", 500);
  EXPECT_EQ(p.samples(), 100u);
  EXPECT_NEAR(p.mean_wall_ns(), 500e6, 1);
  EXPECT_NEAR(p.fraction(Component::on_cpu), 0.60, 1e-9);
  EXPECT_NEAR(p.fraction(Component::network), 0.15, 1e-9);
  EXPECT_NEAR(p.fraction(Component::cpu_throttled), 0.0, 1e-12);
}

TEST(VerdictFaults, CpuThrottling) {
  ComponentProfile p = normal_profile("generation", 500);
  // 1.42 s: the normal 500 ms of work stretched by 895 ms of throttling (63%).
  auto r = record("generation", {{Component::on_cpu, 430 * ms},
                                 {Component::runqueue, 45 * ms},
                                 {Component::cpu_throttled, 895 * ms},
                                 {Component::network, 50 * ms}});
  EvidenceHints hints;
  hints.throttled_periods = 12;
  hints.peer = "10.0.0.7:443";  // irrelevant to this verdict: must not appear
  Verdict v = explain(r, &p, hints);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].component, Component::cpu_throttled);
  EXPECT_EQ(v.evidence, "generation 1.42 s, 63% cpu_throttled: throttled in 12 periods");

  // With the cgroup's cpu.stat over the stage: the example sentence.
  hints.cgroup = "/agents/t-782";
  hints.periods = 50;
  hints.throttled_periods = 41;
  hints.quota_cpus = 0.1;
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "generation 1.42 s, 63% cpu_throttled: cgroup /agents/t-782 throttled in 41 of 50 "
            "periods (quota 0.1 CPU)");

  // No cpu.stat reading inside the stage: the interval read just before it, and it says so.
  hints.throttled_before_stage = true;
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "generation 1.42 s, 63% cpu_throttled: cgroup /agents/t-782 throttled in 41 of 50 "
            "periods just before (quota 0.1 CPU)");

  // ... unless the kernel's throttle clock saw the stage's own waits throttled: that is
  // evidence from inside the stage, however short.
  r.throttled_waits = 3;
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "generation 1.42 s, 63% cpu_throttled: cgroup /agents/t-782 throttled 3 times in the "
            "stage (quota 0.1 CPU)");
  // With no cpu.stat interval at all, the throttle clock alone.
  EvidenceHints only_cgroup;
  only_cgroup.cgroup = "/agents/t-782";
  r.throttled_waits = 1;
  EXPECT_EQ(explain(r, &p, only_cgroup).evidence,
            "generation 1.42 s, 63% cpu_throttled: cgroup /agents/t-782 throttled 1 time in the "
            "stage");
  // A cpu.stat interval inside the stage stays the better evidence.
  hints.throttled_before_stage = false;
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "generation 1.42 s, 63% cpu_throttled: cgroup /agents/t-782 throttled in 41 of 50 "
            "periods (quota 0.1 CPU)");
}

// A lock wait resolved through its holder (critical path) names the holder.
TEST(VerdictFaults, ThrottledLockHolderIsNamed) {
  ComponentProfile p = normal_profile("retrieval", 30);
  auto r = record("retrieval", {{Component::on_cpu, 10 * ms},
                                {Component::lock, 18 * ms},
                                {Component::cpu_throttled, 70 * ms}});
  r.waker = Waker{4242, 70 * ms, Component::cpu_throttled, true};
  EvidenceHints hints;
  hints.cgroup = "/agents/ta";
  hints.periods = 9;
  hints.throttled_periods = 9;
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "retrieval 98 ms, 71% cpu_throttled via lock holder tid 4242: cgroup /agents/ta "
            "throttled in 9 of 9 periods");
  // A helper woken through a condition variable is a thread, not a lock holder.
  r.waker->lock_holder = false;
  EXPECT_EQ(explain(r, &p, EvidenceHints{}).evidence,
            "retrieval 98 ms, 71% cpu_throttled via thread tid 4242");
  // A local server that answered the stage's socket wait is a peer thread.
  r.waker->peer = true;
  EXPECT_EQ(explain(r, &p, EvidenceHints{}).evidence,
            "retrieval 98 ms, 71% cpu_throttled via peer thread tid 4242");
  r.waker->peer = false;
  // A waker whose time went elsewhere is not named on this component.
  r.waker->component = Component::block_io;
  EXPECT_EQ(explain(r, &p, EvidenceHints{}).evidence, "retrieval 98 ms, 71% cpu_throttled");
}

TEST(VerdictFaults, PageCacheMissesInRetrieval) {
  ComponentProfile p = normal_profile("retrieval", 100);
  auto r = record("retrieval", {{Component::on_cpu, 90 * ms},
                                {Component::block_io, 340 * ms},
                                {Component::runqueue, 20 * ms},
                                {Component::network, 30 * ms}});
  r.page_cache_misses = 1240;
  Verdict v = explain(r, &p);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].component, Component::block_io);
  EXPECT_EQ(v.evidence, "retrieval 480 ms, 71% block_io: 1,240 page-cache misses");
}

// The example: page-cache misses forced by the tenant's own memory cgroup limit.
TEST(VerdictFaults, PageCacheMissesUnderAMemoryCgroupLimit) {
  ComponentProfile p = normal_profile("retrieval", 100);
  auto r = record("retrieval", {{Component::on_cpu, 90 * ms},
                                {Component::block_io, 340 * ms},
                                {Component::runqueue, 20 * ms},
                                {Component::network, 30 * ms}});
  r.page_cache_misses = 1840;
  MemoryEvidence m;
  m.reclaimed_bytes = 14ull << 20;
  m.seconds = 1;
  m.usage_bytes = (2ull << 20) - 4096;
  m.limit_bytes = 2ull << 20;
  EvidenceHints hints;
  hints.memory_pressure = describe_memory_pressure("/agents/ta", m);
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "retrieval 480 ms, 71% block_io: 1,840 page-cache misses; memory cgroup /agents/ta at "
            "its 2 MiB limit, reclaiming 14 MiB/s");
  // Far from its limit, and without one.
  m.usage_bytes = 600ull << 10;
  EXPECT_EQ(describe_memory_pressure("/t", m),
            "memory cgroup /t at 29% of its 2 MiB limit, reclaiming 14 MiB/s");
  m.limit_bytes.reset();
  m.seconds = 2;
  m.before_stage = true;
  EXPECT_EQ(describe_memory_pressure("/t", m), "memory cgroup /t reclaiming 7 MiB/s just before");
  // Memory pressure explains block I/O only.
  auto cpu = record("retrieval", {{Component::on_cpu, 900 * ms}, {Component::block_io, 5 * ms}});
  EXPECT_EQ(explain(cpu, &p, hints).evidence.find("memory cgroup"), std::string::npos);
}

// A retrieval that waited mostly on block I/O, and its memory cgroup at its 2 MiB limit,
// reclaiming 14 MiB/s: the memory stall tests' common ground.
StageRecord retrieval_in_block_io() {
  auto r = record("retrieval", {{Component::on_cpu, 90 * ms},
                                {Component::block_io, 340 * ms},
                                {Component::runqueue, 20 * ms},
                                {Component::network, 30 * ms}});
  r.page_cache_misses = 1840;
  return r;
}

MemoryEvidence at_its_limit(double seconds) {
  MemoryEvidence m;
  m.reclaimed_bytes = static_cast<uint64_t>(seconds * (14ull << 20));
  m.seconds = seconds;
  m.usage_bytes = (2ull << 20) - 4096;
  m.limit_bytes = 2ull << 20;
  return m;
}

// The verdict of retrieval_in_block_io() with `m` as its memory evidence (cgroup /agents/ta).
std::string verdict_with(const MemoryEvidence& m) {
  ComponentProfile p = normal_profile("retrieval", 100);
  EvidenceHints hints;
  hints.memory_pressure = describe_memory_pressure("/agents/ta", m);
  return explain(retrieval_in_block_io(), &p, hints).evidence;
}

// The memory stall (PSI) over the same interval: the cgroup's own where it has a pressure file
// (v2), the node's where it has none (v1), said which; nothing when there was none.
TEST(VerdictFaults, MemoryStallFromTheCgroupsOwnPressureFile) {
  MemoryEvidence m = at_its_limit(1);
  m.stall_some_us = 230'000;
  m.stall_full_us = 90'000;
  m.stall_scope = StallScope::cgroup;
  EXPECT_EQ(verdict_with(m),
            "retrieval 480 ms, 71% block_io: 1,840 page-cache misses; memory cgroup /agents/ta at "
            "its 2 MiB limit, reclaiming 14 MiB/s, tasks stalled on memory 23% of the time (PSI)");
  // A stall too short to round to 1%, and one counted over more time than the interval (the
  // file is read a moment after the clock): never "0%", never over 100%.
  m.stall_some_us = 3'000;
  EXPECT_EQ(describe_memory_pressure("/t", m),
            "memory cgroup /t at its 2 MiB limit, reclaiming 14 MiB/s, tasks stalled on memory <1% "
            "of the time (PSI)");
  m.stall_some_us = 1'004'000;
  m.before_stage = true;
  EXPECT_EQ(describe_memory_pressure("/t", m),
            "memory cgroup /t at its 2 MiB limit, reclaiming 14 MiB/s just before, tasks stalled "
            "on memory 100% of the time (PSI)");
  // No stall in the interval: the text without it.
  m.stall_some_us = 0;
  m.before_stage = false;
  EXPECT_EQ(describe_memory_pressure("/t", m),
            "memory cgroup /t at its 2 MiB limit, reclaiming 14 MiB/s");
}

TEST(VerdictFaults, MemoryStallOfTheNodeForAV1MemoryCgroup) {
  MemoryEvidence m = at_its_limit(2);
  m.stall_some_us = 240'000;
  m.stall_scope = StallScope::node;
  EXPECT_EQ(verdict_with(m),
            "retrieval 480 ms, 71% block_io: 1,840 page-cache misses; memory cgroup /agents/ta at "
            "its 2 MiB limit, reclaiming 14 MiB/s; node memory stall 12% (PSI)");
  // Stall figures without a scope (no reading at one end) are not cited.
  m.stall_scope = StallScope::none;
  EXPECT_EQ(describe_memory_pressure("/agents/ta", m),
            "memory cgroup /agents/ta at its 2 MiB limit, reclaiming 14 MiB/s");
}

// A block_io stage names the other cgroup whose requests kept the disk busy around it.
TEST(VerdictFaults, BlockIoNamesWhoseIoKeptTheDiskBusy) {
  ComponentProfile p = normal_profile("retrieval", 100);
  auto r = record("retrieval", {{Component::block_io, 340 * ms}, {Component::on_cpu, 40 * ms}});
  r.page_cache_misses = 212;
  DiskEvidence d;
  d.cgroup = "/batch/backup";
  d.device = "vda";
  d.busy_ns = 9 * 1'000 * ms;
  d.total_busy_ns = 10 * 1'000 * ms;
  d.bytes = 412ull << 20;
  EvidenceHints hints;
  hints.disk_user = describe_disk_user(d);
  EXPECT_EQ(explain(r, &p, hints).evidence,
            "retrieval 380 ms, 89% block_io: 212 page-cache misses; disk vda busy with cgroup "
            "/batch/backup's I/O (90% of its request time, 412 MiB)");
  // It explains block I/O only.
  auto cpu = record("retrieval", {{Component::on_cpu, 900 * ms}, {Component::block_io, 5 * ms}});
  EXPECT_EQ(explain(cpu, &p, hints).evidence.find("disk vda"), std::string::npos);
}

TEST(VerdictFaults, SlowNetworkPeerInTool) {
  ComponentProfile p = normal_profile("tool", 100);
  auto r = record("tool", {{Component::network, 1'995 * ms}, {Component::on_cpu, 105 * ms}});
  EvidenceHints hints;
  hints.peer = "api.weather:443";
  Verdict v = explain(r, &p, hints);
  ASSERT_FALSE(v.culprits.empty());
  EXPECT_EQ(v.culprits[0].component, Component::network);
  EXPECT_EQ(v.evidence, "tool 2.1 s, 95% network: peer api.weather:443");
}

TEST(VerdictFaults, SlowNetworkPeerMeasuredByTheKernel) {
  ComponentProfile p = normal_profile("tool", 100);
  auto r = record("tool", {{Component::network, 1'995 * ms}, {Component::on_cpu, 105 * ms}});
  r.network_peer = "127.0.0.1:7070";
  r.network_peer_ns = 1'990 * ms;
  Verdict v = explain(r, &p);
  ASSERT_FALSE(v.culprits.empty());
  EXPECT_EQ(v.culprits[0].component, Component::network);
  EXPECT_EQ(v.evidence, "tool 2.1 s, 95% network: peer 127.0.0.1:7070");

  // A peer the caller knows better (a name) wins over the kernel's address.
  EvidenceHints hints;
  hints.peer = "api.weather:443";
  EXPECT_EQ(explain(r, &p, hints).evidence, "tool 2.1 s, 95% network: peer api.weather:443");

  // The peer is evidence for the network component only.
  auto cpu = record("tool", {{Component::on_cpu, 1'905 * ms}, {Component::network, 15 * ms}});
  cpu.network_peer = "127.0.0.1:7070";
  EXPECT_EQ(explain(cpu, &p).evidence, "tool 1.92 s, 99% on_cpu");
}

TEST(VerdictFaults, NoisyNeighbourPreemptionNamesTwoComponents) {
  ComponentProfile p = normal_profile("generation", 200);
  // Runqueue wait and throttling both grew well beyond normal.
  auto r = record("generation", {{Component::on_cpu, 120 * ms},
                                 {Component::runqueue, 500 * ms},
                                 {Component::cpu_throttled, 300 * ms},
                                 {Component::block_io, 20 * ms},
                                 {Component::network, 30 * ms},
                                 {Component::unattributed, 10 * ms}});
  EvidenceHints hints;
  hints.preempting_cgroup = "/batch/train";
  Verdict v = explain(r, &p, hints);
  ASSERT_EQ(v.culprits.size(), 2u);
  EXPECT_EQ(v.culprits[0].component, Component::runqueue);
  EXPECT_EQ(v.culprits[1].component, Component::cpu_throttled);
  EXPECT_EQ(v.evidence,
            "generation 980 ms, 51% runqueue: preempted by /batch/train, 31% cpu_throttled");
}

TEST(VerdictFaults, NormalShareOfALargeComponentIsNotBlamed) {
  // on_cpu is 60% normally; a stage slowed by lock contention keeps its normal CPU time, so
  // the lock, not the (still largest) on_cpu, explains the excess.
  ComponentProfile p = normal_profile("generation", 500);
  auto r = record("generation", {{Component::on_cpu, 300 * ms},
                                 {Component::lock, 250 * ms},
                                 {Component::runqueue, 50 * ms},
                                 {Component::block_io, 50 * ms},
                                 {Component::network, 75 * ms}});
  ASSERT_EQ(r.largest(), Component::on_cpu);
  EvidenceHints hints;
  hints.lock_name = "kv_cache_mutex";
  Verdict v = explain(r, &p, hints);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].component, Component::lock);
  EXPECT_EQ(v.evidence, "generation 725 ms, 34% lock: contended kv_cache_mutex");
}

TEST(VerdictFaults, WithoutHistoryTheLargestComponentIsBlamed) {
  auto r = record("embed", {{Component::gpu, 700 * ms}, {Component::on_cpu, 100 * ms}});
  Verdict v = explain(r, nullptr);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].component, Component::gpu);
  EXPECT_EQ(v.evidence, "embed 800 ms, 88% gpu");
}

}  // namespace
}  // namespace tailcause::core
