// SPDX-License-Identifier: Apache-2.0
// Root tests of the attribution family: the real SDK probes in tests/testprogs/attrib_target,
// real cgroup quotas and memory limits, a really dropped page cache, a real slow loopback peer,
// real contention.
#include <algorithm>
#include <filesystem>

#include "attrib_fixture.h"
#include "probes/memcg_pressure.h"

namespace tailcause::testing {
namespace {

// (1) A CPU-bound stage in a cgroup limited to 10% of a CPU waits mostly for quota.
TEST_F(AttribTest, QuotaThrottlingDominatesACpuBoundStage) {
  TestCgroup limited("attrib-quota");
  limited.set_cpu_quota(0.1);
  probe->start(ctx);
  run_target({"cpu", "0x101", "attrib-quota", "150"}, &limited);
  run_target({"cpu", "0x102", "attrib-free", "150"});

  const StageRecord throttled = only_stage(0x101);
  EXPECT_EQ(throttled.largest(), Component::cpu_throttled) << describe(throttled);
  EXPECT_GT(part(throttled, Component::on_cpu), 120'000'000u) << describe(throttled);
  EXPECT_GT(part(throttled, Component::cpu_throttled), 500'000'000u) << describe(throttled);
  // The run queue's throttle clock is evidence of its own: 150 ms of work at 10 ms a 100 ms
  // period waits out the quota about 14 times; a stage outside any quota never.
  EXPECT_GE(throttled.throttled_waits, 3u) << describe(throttled);

  const StageRecord free = only_stage(0x102);
  EXPECT_NE(free.largest(), Component::cpu_throttled) << describe(free);
  EXPECT_LT(part(free, Component::cpu_throttled), free.wall_ns() / 10) << describe(free);
  EXPECT_EQ(free.throttled_waits, 0u) << describe(free);

  const auto m = scrape();
  EXPECT_GT(
      value(m, "tailcause_stage_time_seconds",
            {{"tenant", "attrib-quota"}, {"stage", "generation"}, {"component", "cpu_throttled"}}),
      0.5);
  const core::Sample* h = find_sample(m, "tailcause_stage_duration_seconds",
                                      {{"tenant", "attrib-quota"}, {"stage", "generation"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 1u);
  bool exemplar = false;
  for (const auto& e : h->histogram.exemplars) {
    exemplar = exemplar || (e && e->labels.at(0).second == "4bf92f3577b34da6a3ce929d0e0e4736");
  }
  EXPECT_TRUE(exemplar) << "the stage's trace id is an exemplar of its bucket";
  const std::string text = exporter::render(m, exporter::Format::OpenMetrics);
  EXPECT_NE(text.find("# {trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\"}"), std::string::npos);
  EXPECT_NE(
      text.find("tailcause_stage_time_seconds_total{tenant=\"attrib-quota\",agent=\"attrib-test\","
                "stage=\"generation\",component=\"cpu_throttled\"}"),
      std::string::npos);
}

// (1b) The same quota while the stage thread is flipped between two CPUs every 2 ms (a hog of
// its cgroup spends the quota on CPU 0): its waits cross run queues, where the throttle clock
// read at a wait's start cannot be read again at its end. The waits stay throttling.
TEST_F(AttribTest, ThrottlingFollowsAWaitAcrossCpus) {
  if (const auto why = why_no_thread_cgroups(2); !why.empty()) GTEST_SKIP() << why;
  TestCgroup limited("attrib-moving");
  limited.set_cpu_quota(0.1);
  probe->start(ctx);
  run_target({"moving-wait", "0x105", "attrib-moving", "40", limited.dir() + "/tasks"});
  const StageRecord r = only_stage(0x105);
  const uint64_t throttled = part(r, Component::cpu_throttled);
  const uint64_t queued = part(r, Component::runqueue);
  std::cout << "[ figures  ] " << describe(r) << ": cpu_throttled "
            << 100.0 * throttled / std::max<uint64_t>(throttled + queued, 1)
            << "% of the waits to run\n";
  // Counted by the state where each wait began, the crossing waits would be run-queue time
  // and throttling near zero; a busy machine adds real run-queue time, so: the larger part.
  EXPECT_EQ(r.largest(), Component::cpu_throttled) << describe(r);
  EXPECT_GT(throttled, queued) << describe(r);
}

// (1c) A wait that begins on a CPU where the cgroup is not throttled and is moved, still
// waiting, to one where it is (the load balancer does this; here an affinity change, while a
// SCHED_FIFO thread holds the first CPU): the throttled time on the new run queue is the
// wait's, not "run queue" by the state where it began. On 6.18's task-based throttling this
// passes without attrib_migrate_btf too (the moved thread is picked and throttled anew on the
// new run queue, a wait of its own there); the handler is for a thread moved straight into a
// throttled run queue's waiting list, seen under the e2e quota as ~100 ms "run queue" waits.
TEST_F(AttribTest, AWaitMovedOntoAThrottledCpuIsThrottling) {
  if (const auto why = why_no_thread_cgroups(2); !why.empty()) GTEST_SKIP() << why;
  TestCgroup limited("attrib-migrated");
  limited.set_cpu_quota(0.1);
  probe->start(ctx);
  run_target({"migrated-wait", "0x106", "attrib-migrated", "12", limited.dir() + "/tasks"});
  int slow = 0;
  uint64_t throttled = 0, queued = 0;
  for (const auto& r : stages_of(0x106)) {
    const uint64_t waited = part(r, Component::cpu_throttled) + part(r, Component::runqueue);
    if (waited < 10'000'000) continue;  // landed while the cgroup could run
    ++slow;
    throttled += part(r, Component::cpu_throttled);
    queued += part(r, Component::runqueue);
  }
  std::cout << "[ figures  ] " << slow << " of 12 waits over 10 ms: "
            << 100.0 * throttled / std::max<uint64_t>(throttled + queued, 1)
            << "% cpu_throttled of their wait to run\n";
  EXPECT_GE(slow, 3);
  // Misread, the moved waits are run-queue time and throttling near zero (see 1b).
  EXPECT_GT(throttled, queued);
}

// (2) Reading a file whose pages were dropped shows block I/O and page-cache misses.
TEST_F(AttribTest, ColdPageCacheShowsBlockIoAndMisses) {
  const std::string file = disk_scratch_dir() + "/attrib-cold.bin";
  constexpr size_t kBytes = 48 << 20;
  write_random_file(file, kBytes, 7);
  probe->start(ctx);
  run_target({"read", "0x201", "attrib-cold", file, "1"});
  run_target({"read", "0x202", "attrib-warm", file, "0"});
  unlink(file.c_str());

  const StageRecord cold = only_stage(0x201), warm = only_stage(0x202);
  EXPECT_EQ(cold.bytes_read, kBytes);
  EXPECT_EQ(warm.bytes_read, kBytes);
  EXPECT_GT(cold.page_cache_misses, (kBytes / 4096) * 9 / 10) << describe(cold);
  EXPECT_LT(warm.page_cache_misses, cold.page_cache_misses / 10) << describe(warm);
  EXPECT_GT(part(cold, Component::block_io), 0u) << describe(cold);
  EXPECT_LT(part(warm, Component::block_io) * 5, part(cold, Component::block_io) + 1)
      << describe(warm);
  const auto m = scrape();
  EXPECT_GT(value(m, "tailcause_stage_page_cache_misses",
                  {{"tenant", "attrib-cold"}, {"stage", "retrieval"}}),
            10000);
}

// (2b) The same cold read by a process whose memory cgroup is limited to 4 MiB: every page it
// reads must be made room for, and the kernel reclaims in the reading thread's own context.
// That CPU time is the page cache's cost, block_io, not the stage's own work: the stage's
// on_cpu is what is left of its thread's CPU time (the kernel's own count) without it. Beside
// it the same read without a limit, whose CPU time stays on_cpu.
TEST_F(AttribTest, ReclaimUnderAMemoryLimitIsBlockIo) {
  const auto layout = probes::memory_cgroup_layout(host_layout());
  if (!layout) GTEST_SKIP() << "no memory controller on this host";
  const std::string file = disk_scratch_dir() + "/attrib-reclaim.bin";
  constexpr size_t kBytes = 64 << 20;
  write_random_file(file, kBytes, 11);
  MemoryCgroup limited(*layout, "tailcause-attrib-reclaim");
  ASSERT_TRUE(limited.limit(4 << 20)) << limited.dir();
  probe->start(ctx);
  const std::string out =
      run_target({"read", "0x203", "attrib-reclaim", file, "1", limited.dir() + "/cgroup.procs"});
  const std::string free_out = run_target({"read", "0x204", "attrib-free", file, "1"});
  unlink(file.c_str());

  const auto cpu_ns = [](const std::string& o) {
    const auto at = o.find("cpu_ms=");
    return at == std::string::npos ? 0.0 : std::stod(o.substr(at + 7)) * 1e6;
  };
  const StageRecord r = only_stage(0x203), free = only_stage(0x204);
  const double cpu = cpu_ns(out), free_cpu = cpu_ns(free_out);
  const double on_cpu = static_cast<double>(part(r, Component::on_cpu));
  std::cout << "[ figures  ] limited: " << describe(r) << "; thread CPU " << cpu / 1e6 << " ms, "
            << 100 * on_cpu / std::max(cpu, 1.0) << "% of it on_cpu\n"
            << "[ figures  ] free: " << describe(free) << "; thread CPU " << free_cpu / 1e6
            << " ms\n";
  EXPECT_EQ(r.bytes_read, kBytes);
  ASSERT_GT(cpu, 0) << out;
  EXPECT_EQ(r.largest(), Component::block_io) << describe(r);
  // Reclaim is about 40% of the limited reader's CPU time: on_cpu was 57-63% of it in six
  // runs, 102% in three with reclaim counted as on_cpu.
  EXPECT_LT(on_cpu, 0.8 * cpu) << describe(r);
  EXPECT_GT(static_cast<double>(part(free, Component::on_cpu)), 0.8 * free_cpu) << describe(free);
}

// (2c) A stage queued on its CPU behind a thread of its own process that reclaims memory waits
// on the page cache's cost, not on CPU contention. A spinning generation stage shares CPU 0
// with the cold read of (2b), so it waits to run whenever the reader runs: under the 4 MiB
// limit, the part of its wait the reader spent reclaiming is block_io, and matches the reader's
// reclaim (its thread CPU time, the kernel's own count, less what the family counted as its own
// work). Beside the same read without a limit, its wait stays run queue; so does the wait of a
// stage in another process behind the same reclaim (a neighbour's, named as such).
TEST_F(AttribTest, AWaitBehindReclaimIsBlockIo) {
  const auto layout = probes::memory_cgroup_layout(host_layout());
  if (!layout) GTEST_SKIP() << "no memory controller on this host";
  const std::string file = disk_scratch_dir() + "/attrib-queued.bin";
  write_random_file(file, 64 << 20, 12);
  MemoryCgroup limited(*layout, "tailcause-attrib-queued");
  ASSERT_TRUE(limited.limit(4 << 20)) << limited.dir();
  const std::string procs = limited.dir() + "/cgroup.procs";
  probe->start(ctx);
  const std::string out = run_target({"queued", "0x210", "attrib-queued", file, "spinner", procs});
  run_target({"queued", "0x212", "attrib-queued-free", file, "spinner"});
  // Another process's stage burning CPU on CPU 0 while the limited read runs there alone.
  const pid_t neighbour = spawn_target({"cpu", "0x215", "attrib-queued-apart", "400"});
  cpu_set_t cpu0;
  CPU_ZERO(&cpu0);
  CPU_SET(0, &cpu0);
  ASSERT_EQ(sched_setaffinity(neighbour, sizeof cpu0, &cpu0), 0);
  std::this_thread::sleep_for(100ms);  // in its stage
  const std::string apart_out =
      run_target({"queued", "0x214", "attrib-queued-apart", file, "alone", procs});
  const int status = reap_target(neighbour);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  unlink(file.c_str());

  const auto reclaim_of = [](const std::string& o, const StageRecord& r) {
    const auto at = o.find("cpu_ms=");
    const double cpu = at == std::string::npos ? 0.0 : std::stod(o.substr(at + 7)) * 1e6;
    return cpu - static_cast<double>(part(r, Component::on_cpu));
  };
  const auto waited = [](const StageRecord& r) {
    return static_cast<double>(part(r, Component::runqueue) + part(r, Component::block_io));
  };
  const auto block_io = [](const StageRecord& r) {
    return static_cast<double>(part(r, Component::block_io));
  };
  const StageRecord reader = only_stage(0x210), spinner = only_stage(0x211);
  const StageRecord free_spinner = only_stage(0x213);
  const StageRecord apart_reader = only_stage(0x214), apart = only_stage(0x215);
  const double reclaim = reclaim_of(out, reader),
               apart_reclaim = reclaim_of(apart_out, apart_reader);
  std::cout << "[ figures  ] reader: " << describe(reader) << "; its reclaim " << reclaim / 1e6
            << " ms\n[ figures  ] spinner: " << describe(spinner) << "; "
            << 100 * block_io(spinner) / std::max(waited(spinner), 1.0)
            << "% of its wait block_io\n[ figures  ] free: " << describe(free_spinner)
            << "\n[ figures  ] another process beside a reclaim of " << apart_reclaim / 1e6
            << " ms: " << describe(apart) << "\n";
  ASSERT_GT(reclaim, 0.2 * static_cast<double>(part(reader, Component::on_cpu)))
      << "the reader hardly reclaimed: " << describe(reader);
  // The spinner is always runnable, so it waited out all of the reader's reclaim: 80-94% of it
  // counted in 14 runs. Without the reclaim clock, 0%.
  EXPECT_GT(block_io(spinner), 0.5 * reclaim) << describe(spinner);
  EXPECT_LT(block_io(spinner), 1.5 * reclaim) << describe(spinner);
  EXPECT_LT(block_io(free_spinner), 0.05 * waited(free_spinner)) << describe(free_spinner);
  ASSERT_GT(apart_reclaim, 0.2 * static_cast<double>(part(apart_reader, Component::on_cpu)))
      << "the reader hardly reclaimed: " << describe(apart_reader);
  EXPECT_GT(waited(apart), 0.5 * apart_reclaim) << "it did not wait behind the reader";
  EXPECT_LT(block_io(apart), 0.05 * waited(apart)) << describe(apart);
}

// (3) A tool stage waiting 300 ms for a loopback peer is network time.
TEST_F(AttribTest, SlowPeerIsNetworkTime) {
  probe->start(ctx);
  run_target({"slow-peer", "0x301", "attrib-net", "300"});
  const StageRecord r = only_stage(0x301);
  EXPECT_EQ(r.stage, "tool");
  EXPECT_EQ(r.largest(), Component::network) << describe(r);
  EXPECT_GT(part(r, Component::network), 250'000'000u) << describe(r);
}

// (4) Waiting for a mutex another thread holds for 300 ms is lock time.
TEST_F(AttribTest, MutexContentionIsLockTime) {
  probe->start(ctx);
  run_target({"lock", "0x401", "attrib-lock", "300"});
  const StageRecord r = only_stage(0x401);
  EXPECT_EQ(r.stage, "locked");
  EXPECT_EQ(r.largest(), Component::lock) << describe(r);
  EXPECT_GT(part(r, Component::lock), 200'000'000u) << describe(r);
}

// (6) Work handed to a worker thread stays attributed to the request, its tenant and stage.
TEST_F(AttribTest, HandOffToWorkerKeepsAttribution) {
  probe->start(ctx);
  const std::string printed = run_target({"handoff", "0x601", "attrib-hand", "100"});
  std::vector<StageRecord> workers, owners;
  for (const auto& s : stages_of(0x601)) (s.worker() ? workers : owners).push_back(s);
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_EQ(owners.size(), 1u);
  const StageRecord& w = workers[0];
  EXPECT_EQ(w.id.tenant, "attrib-hand");
  EXPECT_EQ(w.stage, "embedding");
  EXPECT_EQ(w.id.trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_NE(printed.find("worker_tid=" + std::to_string(w.tid)), std::string::npos) << printed;
  EXPECT_NE(w.tid, owners[0].tid);
  EXPECT_GT(part(w, Component::on_cpu), 80'000'000u) << describe(w);
  // The owner waited for the worker (a join: futex) while the worker ran.
  EXPECT_EQ(owners[0].largest(), Component::lock) << describe(owners[0]);

  const auto m = scrape();
  // The worker's own time is helper time, apart from the stage's (which is its wall time).
  const double on_cpu =
      value(m, "tailcause_stage_helper_seconds",
            {{"tenant", "attrib-hand"}, {"stage", "embedding"}, {"component", "on_cpu"}});
  EXPECT_GE(on_cpu, seconds(part(w, Component::on_cpu)));
  const core::Sample* h = find_sample(m, "tailcause_stage_duration_seconds",
                                      {{"tenant", "attrib-hand"}, {"stage", "embedding"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 1u) << "a worker span is not a stage of its own";
}

// (6) Two tenants interleaved on two threads never mix; (5) checked on many stages.
TEST_F(AttribTest, TwoTenantsNeverMix) {
  probe->start(ctx);
  run_target({"tenants", "30"});
  int a = 0, b = 0;
  for (const auto& s : stages) {
    const uint64_t prefix = s.id.request_id & ~0xffffull;
    if (s.id.tenant == "attrib-a") {
      ++a;
      EXPECT_EQ(prefix, 0xA0000u);
      EXPECT_EQ(s.stage, "generation");
      EXPECT_LT(part(s, Component::sleep) + part(s, Component::lock), s.wall_ns() / 10)
          << describe(s);
    } else if (s.id.tenant == "attrib-b") {
      ++b;
      EXPECT_EQ(prefix, 0xB0000u);
      EXPECT_EQ(s.stage, "tool");
      EXPECT_EQ(s.largest(), Component::sleep) << describe(s);
    } else {
      ADD_FAILURE() << "unexpected " << describe(s);
    }
  }
  EXPECT_EQ(a, 30);
  EXPECT_EQ(b, 30);
  std::cout << "[ figures  ] switch-ins the kernel did not report, recovered: "
            << probe->missed_switches() << "\n";
  const auto m = scrape();
  EXPECT_EQ(value(m, "tailcause_requests", {{"tenant", "attrib-a"}, {"status", "ok"}}), 30);
  EXPECT_EQ(value(m, "tailcause_requests", {{"tenant", "attrib-b"}, {"status", "ok"}}), 30);
  EXPECT_EQ(find_sample(m, "tailcause_stage_duration_seconds",
                        {{"tenant", "attrib-a"}, {"stage", "tool"}}),
            nullptr);
}

// The cache library's actions, fired by its real code (evictions past a small quota, admission
// rejects, a model version change, rebalances), are counted by the daemon exactly as the library
// counted them itself.
TEST_F(AttribTest, CacheLibraryActionsAreCountedAsTheLibraryCountsThem) {
  probe->start(ctx);
  const std::string out = run_target({"cache-actions", "attrib-cache"});
  const auto m = scrape();
  for (const std::string cache : {"attrib-lru", "attrib-tinylfu"}) {
    SCOPED_TRACE(cache);
    auto printed = [&](const std::string& key) {
      const std::string k = cache + "." + key + "=";
      const auto at = out.find(k);
      EXPECT_NE(at, std::string::npos) << k << " in " << out;
      return at == std::string::npos ? -1.0 : std::stod(out.substr(at + k.size()));
    };
    const core::Labels who{{"tenant", "attrib-cache"}, {"cache", cache}};
    auto series = [&](const char* name, const char* action) {
      core::Labels l = who;
      l.emplace_back("action", action);
      return value(m, name, l);
    };
    EXPECT_GT(printed(cache == "attrib-lru" ? "evicted" : "rejected"), 0) << out;
    EXPECT_GT(printed("invalidated"), 0) << out;
    EXPECT_EQ(series("tailcause_cache_action_entries", "evict"), printed("evicted"));
    EXPECT_EQ(series("tailcause_cache_action_entries", "reject"), printed("rejected"));
    EXPECT_EQ(series("tailcause_cache_actions", "reject"), printed("rejected"));
    EXPECT_EQ(series("tailcause_cache_action_entries", "invalidate"), printed("invalidated"));
    EXPECT_EQ(series("tailcause_cache_actions", "rebalance"), printed("rebalances"));
    EXPECT_EQ(series("tailcause_cache_actions", "warmup"), 0);
    EXPECT_EQ(value(m, "tailcause_cache_quota_bytes", who), printed("quota_bytes"));
  }
}

// Inference signals: cache lookups and hit ages, layer x batch timing, time to first token and
// per output token, output entropy.
TEST_F(AttribTest, InferenceSignalsReachTheirSeries) {
  probe->start(ctx);
  run_target({"llm", "0x501", "attrib-llm"});
  ASSERT_EQ(requests.size(), 1u);
  const core::RequestRecord& r = requests[0];
  EXPECT_EQ(r.tokens, 10u);
  ASSERT_TRUE(r.time_to_first_token());
  EXPECT_GT(*r.time_to_first_token(), 0.015);  // after the 20 ms prefill
  ASSERT_TRUE(r.time_per_output_token());
  EXPECT_GT(*r.time_per_output_token(), 0.001);  // 2 ms sleeps between tokens

  const auto m = scrape();
  const core::Labels who{{"tenant", "attrib-llm"}, {"agent", "attrib-llm"}};
  for (const char* name :
       {"tailcause_time_to_first_token_seconds", "tailcause_time_per_output_token_seconds",
        "tailcause_request_duration_seconds", "tailcause_output_entropy"}) {
    const core::Sample* h = find_sample(m, name, who);
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->histogram.count, 1u) << name;
  }
  EXPECT_NEAR(find_sample(m, "tailcause_output_entropy", who)->histogram.sum, 1.25, 1e-9);
  for (const char* result : {"hit", "miss", "stale"}) {
    EXPECT_EQ(value(m, "tailcause_cache_lookups",
                    {{"tenant", "attrib-llm"}, {"cache", "vectors"}, {"result", result}}),
              1)
        << result;
  }
  const core::Sample* age = find_sample(m, "tailcause_cache_hit_age_seconds",
                                        {{"tenant", "attrib-llm"}, {"cache", "vectors"}});
  ASSERT_NE(age, nullptr);
  EXPECT_EQ(age->histogram.count, 2u);
  EXPECT_NEAR(age->histogram.sum, 92.0, 1e-6);
  for (const char* layer : {"0", "1"}) {
    const core::Sample* h =
        find_sample(m, "tailcause_layer_duration_seconds", {{"layer", layer}, {"batch_size", "4"}});
    ASSERT_NE(h, nullptr) << layer;
    EXPECT_GE(h->histogram.count, 10u) << layer;  // other processes may add their own
  }
}

// (7) Bad input is counted per kind and changes nothing else.
TEST_F(AttribTest, BadInputIsCountedAndNothingLeaks) {
  probe->start(ctx);
  run_target({"bad"});
  run_target({"exit-mid-stage", "0x701"});
  // The exited process's request is freed once its exit record is consumed.
  auto leftovers = [&] {
    size_t n = 0;
    for (uint32_t pid : targets) n += probe->live_requests(pid) + probe->live_processes(pid);
    return n;
  };
  for (int i = 0; i < 50 && leftovers(); ++i) {
    probe->tick(ctx);
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(leftovers(), 0u);

  const auto m = scrape();
  for (const char* kind :
       {"stage_end_without_begin", "stage_begin_twice", "unknown_stage_kind", "unknown_request",
        "tenant_too_long", "name_too_long", "request_begin_twice", "request_end_without_begin",
        "stage_mismatch", "detach_without_attach", "bad_cache_result", "layer_end_without_begin",
        "bad_trace_id", "invalid_utf8", "exit_mid_stage", "request_not_ended"}) {
    EXPECT_GE(value(m, "tailcause_sdk_errors", {{"kind", kind}}), 1) << kind;
  }
  EXPECT_GE(value(m, "tailcause_sdk_errors", {{"kind", "exit_mid_stage"}}), 2);
  // Bad strings become bounded labels.
  EXPECT_NE(find_sample(m, "tailcause_stage_duration_seconds", {{"tenant", std::string(64, 't')}}),
            nullptr);
  EXPECT_NE(find_sample(m, "tailcause_stage_duration_seconds", {{"tenant", core::kInvalidLabel}}),
            nullptr);
  EXPECT_NE(find_sample(m, "tailcause_stage_duration_seconds",
                        {{"tenant", core::kUnknownLabel}, {"stage", "embedding"}}),
            nullptr);
  // A traceparent reached the daemon whole: trace id, parent span id, flags; the generation
  // stage's name is its model. One with upper-case hex is refused.
  const auto linked = only_stage(0xBADA);
  EXPECT_EQ(linked.id.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(linked.id.parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(linked.id.trace_flags, 1);
  EXPECT_EQ(linked.stage, "generation");
  EXPECT_EQ(linked.detail, "openai:gpt-4o");
  const auto upper = only_stage(0xBADB);
  EXPECT_TRUE(upper.id.trace_id.empty() || upper.id.derived_trace_id);
  EXPECT_TRUE(upper.id.parent_span_id.empty());
  EXPECT_TRUE(upper.id.bad_trace_id);
  // Both threads of the exited process sent their stage, flagged.
  int aborted = 0;
  for (const auto& s : stages_of(0x701)) aborted += s.aborted();
  EXPECT_EQ(aborted, 2);
  EXPECT_EQ(value(m, "tailcause_events_lost", {{"source", "attrib"}}), 0);
  // The aborted spans were retired from the gates too: nothing stays open.
  EXPECT_EQ(value(m, "tailcause_attrib_spans_in_progress", {}), 0);
  EXPECT_EQ(probe->spans_in_process_gates(), 0);
}

// What tailcause instrument sends: stages begun with TAILCAUSE_STAGE_FOLLOWS end where the next
// begins, and request_end ends the last one, one probe a stage where there were two. Each stage
// is whole (no gap, its own CPU time) and no error is counted; a following stage while a stage
// of another request is open is still the error it was.
TEST_F(AttribTest, AFollowingStageEndsTheOneBeforeIt) {
  probe->start(ctx);
  run_target({"follows", "0xF00", "attrib-follows"});
  auto got = stages_of(0xF00);
  ASSERT_EQ(got.size(), 3u);
  std::sort(got.begin(), got.end(),
            [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  const char* names[] = {"embedding", "retrieval", "generation"};
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& s = got[i];
    EXPECT_EQ(s.stage, names[i]) << describe(s);
    EXPECT_EQ(s.flags & (ATTRIB_SPAN_REPLACED | ATTRIB_SPAN_MISMATCH), 0u) << describe(s);
    EXPECT_GT(part(s, Component::on_cpu), 4'000'000u) << describe(s);  // 5 ms burnt in each
    if (i > 0) {
      EXPECT_EQ(got[i - 1].end_ns, s.start_ns) << "one clock reading ends and begins";
    }
  }
  const auto replaced = only_stage(0xF01);
  EXPECT_EQ(replaced.stage, "tool");
  EXPECT_NE(replaced.flags & ATTRIB_SPAN_REPLACED, 0u) << describe(replaced);
  EXPECT_EQ(only_stage(0xF02).stage, "response");

  const auto m = scrape();
  EXPECT_EQ(value(m, "tailcause_requests", {{"tenant", "attrib-follows"}, {"status", "ok"}}), 3);
  EXPECT_EQ(value(m, "tailcause_sdk_errors", {{"kind", "stage_begin_twice"}}), 1);
  for (const char* kind : {"stage_end_without_begin", "stage_mismatch", "unknown_stage_kind"}) {
    EXPECT_EQ(sample_value(m, "tailcause_sdk_errors", {{"kind", kind}}).value_or(0), 0) << kind;
  }
  EXPECT_EQ(value(m, "tailcause_attrib_spans_in_progress", {}), 0);
}

// The scheduler programs look at a task only while its process has a span open: an open span
// is counted on the node and in its process's gate, and both go back to zero when it ends.
TEST_F(AttribTest, OpenSpansAreCountedOnTheNodeAndInTheirProcess) {
  probe->start(ctx);
  EXPECT_EQ(probe->spans_in_progress(), 0);
  const pid_t pid = spawn_target({"cpu", "0x7a1", "attrib-gates", "1500"});
  int64_t node = 0, gates = 0;
  for (int i = 0; i < 1000 && node == 0; ++i) {
    std::this_thread::sleep_for(5ms);
    node = probe->spans_in_progress();
    gates = probe->spans_in_process_gates();
  }
  EXPECT_EQ(node, 1);
  EXPECT_EQ(gates, 1);
  EXPECT_EQ(value(scrape(), "tailcause_attrib_spans_in_progress", {}), 1);
  EXPECT_TRUE(WIFEXITED(reap_target(pid)));
  EXPECT_EQ(probe->spans_in_progress(), 0);
  EXPECT_EQ(probe->spans_in_process_gates(), 0);
  EXPECT_EQ(value(scrape(), "tailcause_attrib_spans_in_progress", {}), 0);
  EXPECT_EQ(only_stage(0x7a1).stage, "generation");
}

// (8) A tenant on a page the process has not touched yet, which a BPF program cannot fault in:
// through the SDK (which touches its strings first) it is read right; fired past the SDK, the
// request is labelled unknown and the unreadable string counted.
TEST_F(AttribTest, StringsOnUntouchedPagesAreReadOrCounted) {
  probe->start(ctx);
  const std::string out = run_target({"cold-strings", "0xC01", "0xC02"});
  ASSERT_NE(out.find("present_before=0"), std::string::npos) << out;
  EXPECT_EQ(only_stage(0xC02).id.tenant, "attrib-cold");
  EXPECT_EQ(only_stage(0xC01).id.tenant, core::kUnknownLabel);
  EXPECT_GE(value(scrape(), "tailcause_sdk_errors", {{"kind", "unreadable_string"}}), 1);
}

// Discovery: a process that already runs is found at start; the binary stays attached for the
// grace period after it exits, and is released after it; a process started later is found
// through its exec. Attaches and releases are counted.
TEST_F(AttribTest, DiscoversRunningAndNewProcessesAndReleasesExitedOnes) {
  config.attrib.binary.clear();
  const pid_t pid = spawn_target({"cpu", "0x801", "attrib-early", "10"});
  std::this_thread::sleep_for(300ms);  // exec'd and waiting for a tracer
  probe->start(ctx);
  EXPECT_TRUE(probe->attached_to(kTarget));
  const int status = reap_target(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  only_stage(0x801);
  probe->rescan();
  EXPECT_TRUE(probe->attached_to(kTarget)) << "released within the grace period (30 s)";
  probe->set_release_grace(0ms);
  probe->rescan();
  EXPECT_FALSE(probe->attached_to(kTarget));
  run_target({"cpu", "0x802", "attrib-late", "5"});  // waits until the exec-driven attach
  only_stage(0x802);
  const auto m = scrape();
  EXPECT_GE(value(m, "tailcause_usdt_binary_changes", {{"change", "attach"}}), 2);
  EXPECT_GE(value(m, "tailcause_usdt_binary_changes", {{"change", "release"}}), 1);
}

// A process already running when the family starts that loads the SDK's library later (as the
// Python SDK does, by dlopen) is found through the kernel's report of its new mapping, and the
// scans meanwhile read /proc only for processes so reported, not for every process each second.
TEST_F(AttribTest, ALibraryLoadedLaterIsFoundThroughTheKernelsReport) {
  config.attrib.binary.clear();
  const std::string lib = std::string(TAILCAUSE_BUILD_DIR) + "/sdk/libtailcause_sdk.so";
  const std::string mapped = std::filesystem::canonical(lib).string();  // the path maps show
  // Loads the library once told to on stdin, then waits (20 s at most) for a tracer to enable
  // its probes, and says whether one did.
  const std::string script =
      "import ctypes, sys, time\n"
      "sys.stdin.readline()\n"
      "lib = ctypes.CDLL(sys.argv[1])\n"
      "lib.tailcause_sdk_enabled_mask.restype = ctypes.c_uint32\n"
      "end = time.monotonic() + 20\n"
      "while not lib.tailcause_sdk_enabled_mask() and time.monotonic() < end:\n"
      "    time.sleep(0.05)\n"
      "print('enabled' if lib.tailcause_sdk_enabled_mask() else 'never enabled', flush=True)\n";
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl("/usr/bin/python3", "python3", "-c", script.c_str(), lib.c_str(), nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  std::this_thread::sleep_for(300ms);  // running, its maps without the library
  probe->start(ctx);
  ASSERT_TRUE(probe->mappings().change_feed()) << "the kernel has vm_unmapped_area: expected on";
  EXPECT_FALSE(probe->attached_to(mapped));
  // Three scans with nothing new: only reported processes are looked at.
  const uint64_t processes = probes::all_pids().size(), looks = probe->mappings().looks();
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(200ms);
    probe->rescan();
  }
  const uint64_t quiet_looks = probe->mappings().looks() - looks;
  std::cout << "[ figure   ] three scans looked at " << quiet_looks << " of " << processes
            << " processes' /proc files\n";
  EXPECT_LT(quiet_looks, processes) << "every process was looked at: the feed is not used";

  ASSERT_EQ(write(in[1], "go\n", 3), 3);
  std::string printed;
  int status = 0;
  for (int i = 0; i < 2500 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    probe->tick(ctx);
    std::this_thread::sleep_for(10ms);
  }
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) printed.append(buf, n);
  close(in[1]);
  close(out[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(printed, "enabled\n");
  EXPECT_TRUE(probe->attached_to(mapped));
}

// --binary attaches to one file from the start; --pid to one process, whose exit releases it.
TEST_F(AttribTest, NarrowedToOneBinaryOrOneProcess) {
  probe->start(ctx);  // the fixture narrows to the target binary
  EXPECT_TRUE(probe->attached_to(kTarget));
  EXPECT_EQ(probe->attached_binaries(), 1u);
  run_target({"cpu", "0x901", "attrib-binary", "5"});
  only_stage(0x901);
  probe->stop();

  config.attrib.binary.clear();
  const pid_t pid = spawn_target({"cpu", "0x902", "attrib-pid", "5"});
  std::this_thread::sleep_for(300ms);
  config.attrib.pid = static_cast<uint32_t>(pid);
  probe->start(ctx);
  EXPECT_TRUE(probe->attached_to(kTarget));
  const int status = reap_target(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  only_stage(0x902);
  probe->rescan();
  EXPECT_EQ(probe->attached_binaries(), 0u);

  config.attrib.pid = 0;
  config.attrib.binary = "/bin/true";  // carries no tailcause probes
  EXPECT_THROW(probe->start(ctx), probes::ProbeError);
}

// Figure: what the scheduler hooks cost threads that carry no context (every other thread).
TEST_F(AttribTest, ContextSwitchCostForUntracedThreads) {
  // Both threads on one CPU: every hand-off is one wakeup and one context switch.
  auto ping_pong = [] {
    int ab[2], ba[2];
    if (pipe(ab) != 0 || pipe(ba) != 0) return 0.0;
    constexpr int kRounds = 50000;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    std::thread peer([&] {
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      char c;
      for (int i = 0; i < kRounds; ++i) {
        if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) break;
      }
    });
    cpu_set_t saved;
    pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    const auto start = std::chrono::steady_clock::now();
    char c = 'x';
    for (int i = 0; i < kRounds; ++i) {
      if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) break;
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    peer.join();
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    for (int fd : {ab[0], ab[1], ba[0], ba[1]}) close(fd);
    return s * 1e9 / (2.0 * kRounds);
  };
  double off = 1e9, on = 1e9;
  for (int i = 0; i < 5; ++i) {  // alternate, keep the best of each: the machine is shared
    probe->stop();
    off = std::min(off, ping_pong());
    probe->start(ctx);
    on = std::min(on, ping_pong());
  }
  EXPECT_GT(on, 0);
  std::cout << "[ figures  ] pipe ping-pong on one CPU, ns per hand-off (best of 5): " << off
            << " without the attrib family, " << on << " with it (" << on - off << " ns)\n";
}

// Figures, not assertions on time: stage records per second, loss, probe cost.
TEST_F(AttribTest, FloodOfStagesIsConsumedWithoutLoss) {
  constexpr uint64_t kStages = 200000;
  auto elapsed = [](const std::string& printed) {
    const auto at = printed.find("elapsed_ns=");
    return at == std::string::npos ? 0.0 : std::stod(printed.substr(at + 11)) * 1e-9;
  };
  const std::string n = std::to_string(kStages);
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);  // per-program run time
  const double untraced = elapsed(run_target({"flood", n, "1", "0"}));
  probe->set_observer({});  // count, do not copy, the records
  probe->start(ctx);
  const double traced = elapsed(run_target({"flood", n, "1", "1"}));
  const uint64_t before = probe->records_consumed();
  const uint64_t lost_before = probe->events_lost();
  consume_cpu = 0;
  const double traced2 = elapsed(run_target({"flood", n, "2", "1"}));
  const uint64_t records = probe->records_consumed() - before;
  const uint64_t lost = probe->events_lost() - lost_before;
  std::cout << "[ figures  ] " << kStages << " stages, 1 thread: untraced " << untraced
            << " s, traced " << traced << " s: " << (traced - untraced) * 1e9 / (2 * kStages)
            << " ns per probe hit; 2 threads: " << 2 * kStages / traced2 << " stage records/s, "
            << lost << " lost; the consumer spent " << consume_cpu * 1e9 / records
            << " ns of CPU per record (" << records / consume_cpu << " records per CPU second)\n";
  std::cout << "[ figures  ] BPF run time per program run:";
  for (const bpf_program* p : probe->programs()) {
    if (const bpf_prog_info info = program_info(p); info.run_cnt > 0) {
      std::cout << " " << bpf_program__name(p) << " " << info.run_time_ns / info.run_cnt << " ns ("
                << info.run_cnt << " runs);";
    }
  }
  std::cout << "\n";
  if (stats_fd >= 0) close(stats_fd);
  // On an idle machine nothing is lost (0 of 400,000 here); when other work takes the
  // consumer's CPU the ring can fill (878 lost beside a two-job compile). What must hold either
  // way: every record is consumed or counted lost, and a working consumer takes most of them.
  EXPECT_GE(records + lost, 2 * kStages);
  EXPECT_GT(records, kStages);
  const auto m = scrape();
  const core::Sample* h = find_sample(m, "tailcause_stage_duration_seconds",
                                      {{"tenant", "attrib-flood"}, {"stage", "generation"}});
  ASSERT_NE(h, nullptr);
  EXPECT_GE(h->histogram.count + probe->events_lost(), 3 * kStages);
  EXPECT_LE(h->histogram.count, 3 * kStages);
}

}  // namespace
}  // namespace tailcause::testing
