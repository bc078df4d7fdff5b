// SPDX-License-Identifier: Apache-2.0
// The evidence board: throttling over a stage's interval from cpu.stat samples bracketing it,
// the cgroup that preempted a victim most around a stage, memory reclaim and stall, bounds and
// expiry.
#include <gtest/gtest.h>

#include "core/host/evidence_board.h"

using tailcause::core::EvidenceBoard;
using tailcause::core::MemoryStall;
using tailcause::core::StallScope;

namespace {
constexpr uint64_t s = 1'000'000'000;
constexpr uint64_t ms = 1'000'000;
}  // namespace

TEST(EvidenceBoard, ThrottlingBetweenBracketingSamples) {
  EvidenceBoard b;
  // cpu.stat read once a second: 10 periods a second, throttled in 8 of them from t=3 s.
  for (uint64_t t = 0; t <= 6; t++) {
    const uint64_t periods = t * 10, throttled = t > 3 ? (t - 3) * 8 : 0;
    b.add_throttle_sample("/agents/a", t * s, periods, throttled, 0.1);
  }
  // A stage from 3.5 s to 5.5 s: samples at 3 s and 6 s bracket it.
  auto e = b.throttle_between("/agents/a", 3 * s + s / 2, 5 * s + s / 2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->periods, 30u);
  EXPECT_EQ(e->throttled, 24u);
  ASSERT_TRUE(e->quota_cpus);
  EXPECT_DOUBLE_EQ(*e->quota_cpus, 0.1);
  // Before throttling began: none.
  e = b.throttle_between("/agents/a", 0, 2 * s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->throttled, 0u);
  // A stage that ended after the newest sample uses the newest one.
  e = b.throttle_between("/agents/a", 5 * s, 9 * s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->periods, 10u);
  EXPECT_EQ(e->throttled, 8u);
  EXPECT_FALSE(e->before_stage);
  EXPECT_FALSE(b.throttle_between("/unknown", 0, s));
}

TEST(EvidenceBoard, StageBetweenReadingsGetsTheIntervalJustBefore) {
  EvidenceBoard b;
  for (uint64_t t = 0; t <= 6; t++) b.add_throttle_sample("/a", t * s, t * 10, t * 7, 0.1);
  // A 400 ms stage that ends before the next reading: no reading inside it.
  auto e = b.throttle_between("/a", 6 * s + s / 10, 6 * s + s / 2);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->before_stage);
  EXPECT_EQ(e->periods, 10u);  // the 5 s .. 6 s reading
  EXPECT_EQ(e->throttled, 7u);
}

TEST(EvidenceBoard, OneSampleIsNoEvidence) {
  EvidenceBoard b;
  b.add_throttle_sample("/a", s, 10, 5, std::nullopt);
  EXPECT_FALSE(b.throttle_between("/a", 0, 2 * s));
}

TEST(EvidenceBoard, TopPreemptorAroundTheStage) {
  EvidenceBoard b;
  b.add_preemptions("/agents/a", "/hog", 2 * s, 40, 400 * ms);
  b.add_preemptions("/agents/a", "/agents/b", 2 * s, 5, 5 * ms);
  b.add_preemptions("/agents/a", "/hog", 3 * s, 30, 300 * ms);
  b.add_preemptions("/agents/a", "/agents/b", 9 * s, 500, 900 * ms);  // long after the stage
  auto p = b.top_preemptor("/agents/a", 2 * s, 3 * s);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->by_cgroup, "/hog");
  EXPECT_EQ(p->preemptions, 70u);
  EXPECT_EQ(p->total, 75u);
  EXPECT_EQ(p->wait_ns, 700 * ms);
  EXPECT_EQ(p->total_wait_ns, 705 * ms);
  EXPECT_FALSE(b.top_preemptor("/agents/b", 2 * s, 3 * s));
  EXPECT_FALSE(b.top_preemptor("/agents/a", 20 * s, 21 * s));
}

// Whose I/O kept the disks busy around a stage: the asking cgroup's own requests count in the
// total but are never the answer; ranked by request time, on the disk that cgroup used most.
TEST(EvidenceBoard, TopDiskUserAroundTheStage) {
  EvidenceBoard b;
  b.add_disk_io("/agents/ta", "vda", 2 * s, 1 << 20, 300 * ms);
  b.add_disk_io("/backup", "vda", 2 * s, 64 << 20, 800 * ms);
  b.add_disk_io("/backup", "vdb", 2 * s, 8 << 20, 100 * ms);
  b.add_disk_io("/indexer", "vda", 3 * s, 4 << 20, 200 * ms);
  b.add_disk_io("/indexer", "vda", 9 * s, 900 << 20, 9000 * ms);  // long after the stage
  auto d = b.top_disk_user("/agents/ta", 2 * s, 3 * s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cgroup, "/backup");
  EXPECT_EQ(d->device, "vda");
  EXPECT_EQ(d->busy_ns, 900 * ms);
  EXPECT_EQ(d->bytes, 72u << 20);
  EXPECT_EQ(d->total_busy_ns, 1400 * ms);
  // Only the asking cgroup did I/O then: nobody else to name.
  EvidenceBoard alone;
  alone.add_disk_io("/agents/ta", "vda", 2 * s, 1 << 20, 300 * ms);
  EXPECT_FALSE(alone.top_disk_user("/agents/ta", 2 * s, 3 * s));
  EXPECT_FALSE(b.top_disk_user("/agents/ta", 30 * s, 31 * s));
  // Expiry drops old samples.
  b.expire(400 * s);
  EXPECT_FALSE(b.top_disk_user("/agents/ta", 2 * s, 3 * s));
}

// A hog at a higher CPU weight preempts rarely but each time for long; the many short
// preemptions by the root cgroup's housekeeping must not outrank it.
TEST(EvidenceBoard, TopPreemptorIsRankedByWaitNotCount) {
  EvidenceBoard b;
  b.add_preemptions("/agents/a", "/", 2 * s, 21, 2 * ms);
  b.add_preemptions("/agents/a", "/hog", 2 * s, 18, 198 * ms);
  auto p = b.top_preemptor("/agents/a", 2 * s, 2 * s);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->by_cgroup, "/hog");
  EXPECT_EQ(p->preemptions, 18u);
  EXPECT_EQ(p->total, 39u);
  EXPECT_EQ(p->wait_ns * 100 / p->total_wait_ns, 99u);
}

// The sched family charges a wait to the cgroup that held the CPU meanwhile, which need not
// have preempted anyone (it kept a woken task waiting): wait without preemptions is evidence
// too, and an empty delta is not.
TEST(EvidenceBoard, WaitWithoutPreemptionsCounts) {
  EvidenceBoard b;
  b.add_preemptions("/agents/a", "/tools", 2 * s, 12, 3 * ms);
  b.add_preemptions("/agents/a", "/hog", 2 * s, 0, 250 * ms);
  b.add_preemptions("/agents/a", "/idle", 2 * s, 0, 0);
  auto p = b.top_preemptor("/agents/a", 2 * s, 2 * s);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->by_cgroup, "/hog");
  EXPECT_EQ(p->preemptions, 0u);
  EXPECT_EQ(p->total, 12u);
  EXPECT_EQ(p->total_wait_ns, 253 * ms);
  EXPECT_FALSE(b.top_preemptor("/agents/b", 2 * s, 2 * s));
}

TEST(EvidenceBoard, MemoryReclaimAroundTheStage) {
  EvidenceBoard b;
  const uint64_t limit = 2 << 20;
  b.add_memory_sample("/t", 1 * s, 0, 0, 1 << 20, limit);
  b.add_memory_sample("/t", 2 * s, 0, 0, 1 << 20, limit);  // nothing reclaimed yet
  EXPECT_FALSE(b.memory_between("/t", 1 * s + 10 * ms, 1 * s + 20 * ms));
  b.add_memory_sample("/t", 3 * s, 14 << 20, 80 * ms, limit - 4096, limit);
  auto m = b.memory_between("/t", 2 * s + 10 * ms, 2 * s + 30 * ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reclaimed_bytes, 14u << 20);
  EXPECT_EQ(m->reclaim_ns, 80 * ms);
  EXPECT_DOUBLE_EQ(m->seconds, 1.0);
  EXPECT_EQ(m->limit_bytes, limit);
  EXPECT_FALSE(m->before_stage);
  // A stage after the newest reading: the interval just before, said so.
  auto late = b.memory_between("/t", 3 * s + 10 * ms, 3 * s + 20 * ms);
  ASSERT_TRUE(late);
  EXPECT_TRUE(late->before_stage);
  EXPECT_FALSE(b.memory_between("/other", 2 * s, 3 * s));
}

TEST(EvidenceBoard, MemoryStallOverTheSameInterval) {
  EvidenceBoard b;
  const uint64_t limit = 2 << 20;
  const auto own = [](uint64_t some, uint64_t full) {
    return MemoryStall{some, full, StallScope::cgroup};
  };
  b.add_memory_sample("/t", 1 * s, 0, 0, 1 << 20, limit, own(1'000, 400));
  b.add_memory_sample("/t", 2 * s, 14 << 20, 80 * ms, limit, limit, own(231'000, 100'400));
  auto m = b.memory_between("/t", 1 * s + 10 * ms, 1 * s + 30 * ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reclaimed_bytes, 14u << 20);  // the reclaim as before
  EXPECT_EQ(m->stall_some_us, 230'000u);
  EXPECT_EQ(m->stall_full_us, 100'000u);
  EXPECT_EQ(m->stall_scope, StallScope::cgroup);
  EXPECT_DOUBLE_EQ(m->stall_some_share(), 0.23);

  // Node-wide readings (a v1 memory cgroup has no pressure file of its own).
  const auto node = [](uint64_t some) { return MemoryStall{some, 0, StallScope::node}; };
  b.add_memory_sample("/v1", 1 * s, 0, 0, 0, limit, node(5'000));
  b.add_memory_sample("/v1", 3 * s, 8 << 20, ms, 0, limit, node(245'000));
  m = b.memory_between("/v1", 2 * s, 2 * s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->stall_scope, StallScope::node);
  EXPECT_EQ(m->stall_some_us, 240'000u);
  EXPECT_EQ(m->stall_full_us, 0u);
  EXPECT_DOUBLE_EQ(m->stall_some_share(), 0.12);

  // No reading at one end, or readings of two different files: reclaim only, no stall.
  b.add_memory_sample("/nopsi", 1 * s, 0, 0, 0, limit);
  b.add_memory_sample("/nopsi", 2 * s, 1 << 20, ms, 0, limit, own(9'000, 0));
  b.add_memory_sample("/moved", 1 * s, 0, 0, 0, limit, node(1'000));
  b.add_memory_sample("/moved", 2 * s, 1 << 20, ms, 0, limit, own(9'000, 0));
  for (const char* cgroup : {"/nopsi", "/moved"}) {
    m = b.memory_between(cgroup, 1 * s + 10 * ms, 1 * s + 20 * ms);
    ASSERT_TRUE(m) << cgroup;
    EXPECT_EQ(m->reclaimed_bytes, 1u << 20) << cgroup;
    EXPECT_EQ(m->stall_scope, StallScope::none) << cgroup;
    EXPECT_EQ(m->stall_some_us, 0u) << cgroup;
  }

  // A stall without reclaim is no memory-cgroup evidence (as before: reclaim is the claim);
  // a counter that went back (the cgroup re-created) gives 0, not a wrapped difference; more
  // stall than the interval held reads as 100%.
  b.add_memory_sample("/idle", 1 * s, 0, 0, 0, limit, own(0, 0));
  b.add_memory_sample("/idle", 2 * s, 0, 0, 0, limit, own(500'000, 0));
  EXPECT_FALSE(b.memory_between("/idle", 1 * s + 10 * ms, 1 * s + 20 * ms));
  b.add_memory_sample("/reset", 1 * s, 0, 0, 0, limit, own(900'000, 0));
  b.add_memory_sample("/reset", 2 * s, 1 << 20, ms, 0, limit, own(1'000, 0));
  b.add_memory_sample("/reset", 3 * s, 2 << 20, ms, 0, limit, own(2'001'000, 0));
  m = b.memory_between("/reset", 1 * s + 10 * ms, 1 * s + 20 * ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->stall_some_us, 0u);
  m = b.memory_between("/reset", 2 * s + 10 * ms, 2 * s + 20 * ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->stall_some_us, 2'000'000u);
  EXPECT_DOUBLE_EQ(m->stall_some_share(), 1.0);
}

TEST(EvidenceBoard, BoundedAndExpiring) {
  EvidenceBoard b(10 * s, 2);
  b.add_throttle_sample("/a", s, 1, 0, std::nullopt);
  b.add_preemptions("/b", "/x", s, 1, ms);
  b.add_throttle_sample("/c", s, 1, 0, std::nullopt);  // a third cgroup: refused
  EXPECT_EQ(b.cgroups(), 2u);
  EXPECT_EQ(b.refused(), 1u);
  b.add_throttle_sample("/a", 2 * s, 2, 0, std::nullopt);
  b.expire(30 * s);
  EXPECT_EQ(b.cgroups(), 0u);
  b.add_throttle_sample("/c", 31 * s, 1, 0, std::nullopt);  // room again
  EXPECT_EQ(b.cgroups(), 1u);
}
