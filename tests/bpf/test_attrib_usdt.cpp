// SPDX-License-Identifier: Apache-2.0
// The attribution family's own USDT attach: probe sites read from the SDT notes land on the
// probes' instructions, uprobe_multi links carry every site of a probe in one link (one per
// program and binary) with its argument spec as cookie, and both attach paths (uprobe_multi, and
// perf-event uprobes on kernels without it) trace the SDK's calls. Releasing a binary closes its
// links on the reaper's threads and then frees its argument specs.
#include <fstream>
#include <iterator>

#include "attrib_fixture.h"
#include "held_uprobes.h"
#include "probes/bpf_loader.h"
#include "probes/usdt_notes.h"

namespace tailcause::testing {
namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// The SDK's probes are a nop (x86-64: the 5-byte one, 0f 1f 44 00 00) with a semaphore: the file
// offsets computed from the notes' link-time addresses land on one and point into the file.
TEST(UsdtNotes, SitesLandOnTheProbesInstructions) {
  const auto sites = probes::read_usdt_sites(kTarget, "tailcause");
  EXPECT_TRUE(sites.problems.empty()) << sites.problems.front();
  ASSERT_GE(sites.sites.size(), 20u);  // 28 in this build
  const std::string bytes = file_bytes(kTarget);
  std::set<std::string> names;
  for (const auto& s : sites.sites) {
    names.insert(s.name);
    ASSERT_LT(s.offset, bytes.size()) << s.name;
#if defined(__x86_64__)
    EXPECT_EQ(bytes.compare(s.offset, 5, std::string("\x0f\x1f\x44\x00\x00", 5)), 0)
        << s.name << " at " << s.offset;
#endif
    EXPECT_GT(s.semaphore_offset, 0u) << s.name;
    EXPECT_LT(s.semaphore_offset, bytes.size()) << s.name;
    EXPECT_EQ(s.provider, "tailcause");
  }
  EXPECT_TRUE(names.count("request_begin") && names.count("stage_end")) << names.size();
  EXPECT_TRUE(probes::read_usdt_sites(kTarget, "no-such-provider").sites.empty());
  EXPECT_TRUE(probes::read_usdt_sites("/etc/hostname").sites.empty());
  EXPECT_TRUE(probes::read_usdt_sites("/no/such/file").sites.empty());
}

// One uprobe_multi link per probe (program), carrying all of that probe's sites; the SDK's
// arguments are read through them; stop() leaves no link behind.
TEST_F(AttribTest, UprobeMultiLinkPerProgramCarriesEverySite) {
  if (!ctx.features.uprobe_multi) GTEST_SKIP() << "kernel without uprobe_multi links";
  const auto sites = probes::read_usdt_sites(kTarget, "tailcause");
  std::set<std::string> probe_names;
  for (const auto& s : sites.sites) probe_names.insert(s.name);
  const KernelUprobes before = held_uprobes();
  probe->start(ctx);
  ASSERT_TRUE(probe->attached_to(kTarget));
  EXPECT_TRUE(probe->uprobe_multi());
  const KernelUprobes held = held_uprobes();
  EXPECT_EQ(held.multi_links - before.multi_links, probe_names.size());
  EXPECT_EQ(probe->usdt_links(), probe_names.size());
  EXPECT_EQ(held.multi_sites - before.multi_sites, sites.sites.size());
  EXPECT_LE(held.perf_events - before.perf_events, static_cast<size_t>(probes::possible_cpus()))
      << "perf events: only the major-fault sampler's";
  EXPECT_GT(probe->usdt_spec_ids(), 0u);
  EXPECT_LT(probe->usdt_spec_ids(), sites.sites.size()) << "sites with one argument string share";

  run_target({"cpu", "0xA01", "attrib-multi", "5"});
  const StageRecord r = only_stage(0xA01);
  EXPECT_EQ(r.id.tenant, "attrib-multi");
  EXPECT_EQ(r.stage, "generation");

  probe->stop();
  EXPECT_EQ(held_uprobes().multi_links, before.multi_links);
  EXPECT_EQ(probe->usdt_spec_ids(), 0u);
}

// From Linux 6.18 (x86-64) a uprobe on a 5-byte nop becomes, after its first hit, a call into
// a trampoline page the kernel maps into the process ("[uprobes-trampoline]") and a syscall,
// instead of an int3 trap on every hit. The SDK's sites are that nop, so a traced process
// gets the trampoline once its probes fire. Skipped on kernels without the optimisation.
TEST_F(AttribTest, TracedProbeSitesAreOptimisedIntoTrampolineCalls) {
#if defined(__x86_64__)
  std::ifstream kallsyms("/proc/kallsyms");
  std::string line;
  bool optimising_kernel = false;
  while (!optimising_kernel && std::getline(kallsyms, line))
    optimising_kernel = line.ends_with(" arch_uprobe_optimize");
  if (!optimising_kernel) GTEST_SKIP() << "kernel without uprobe optimisation (Linux < 6.18)";
  probe->start(ctx);
  ASSERT_TRUE(probe->attached_to(kTarget));
  const pid_t pid = spawn_target({"cpu", "0xA05", "attrib-nop5", "1500"});
  bool trampoline = false;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    for (std::string m; !trampoline && std::getline(maps, m);)
      trampoline = m.ends_with("[uprobes-trampoline]");
    probe->tick(ctx);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  probe->consume();
  EXPECT_TRUE(trampoline) << "the traced target never got a [uprobes-trampoline] mapping";
  EXPECT_EQ(only_stage(0xA05).id.tenant, "attrib-nop5");
  probe->stop();
#else
  GTEST_SKIP() << "the 5-byte nop optimisation is x86-64 only";
#endif
}

// Kernels without uprobe_multi: one perf-event uprobe per site, argument specs by cookie too.
TEST_F(AttribTest, PerfEventUprobesWithoutUprobeMulti) {
  probes::Features f = ctx.features;
  f.uprobe_multi = false;
  probes::ProbeContext perf_ctx{f, config, names, signals};
  const auto sites = probes::read_usdt_sites(kTarget, "tailcause");
  const KernelUprobes before = held_uprobes();
  probe->start(perf_ctx);
  ASSERT_TRUE(probe->attached_to(kTarget));
  EXPECT_FALSE(probe->uprobe_multi());
  EXPECT_EQ(held_uprobes().multi_links, before.multi_links);
  EXPECT_EQ(probe->usdt_links(), sites.sites.size());
  run_target({"cpu", "0xA02", "attrib-perf", "5"});
  EXPECT_EQ(only_stage(0xA02).id.tenant, "attrib-perf");
  probe->stop();
  EXPECT_EQ(held_uprobes().perf_events, before.perf_events);
}

// Releasing a binary hands its links to the reaper: it returns before they are closed (the
// daemon's lock is held meanwhile), and the specs are freed once they are. Prints both paths'
// release and stop times.
TEST_F(AttribTest, ReleaseClosesLinksOffTheCallersThread) {
  config.attrib.binary.clear();
  for (const bool multi : {true, false}) {
    if (multi && !ctx.features.uprobe_multi) continue;
    probes::Features f = ctx.features;
    f.uprobe_multi = multi;
    probes::ProbeContext c{f, config, names, signals};
    const pid_t pid = spawn_target({"cpu", multi ? "0xA03" : "0xA04", "attrib-release", "1"});
    std::this_thread::sleep_for(300ms);  // exec'd, waiting for a tracer
    probe->start(c);
    ASSERT_TRUE(probe->attached_to(kTarget));
    const size_t links = probe->usdt_links();
    int status = 0;
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
      probe->tick(c);
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    probe->set_release_grace(0ms);
    auto t0 = std::chrono::steady_clock::now();
    probe->rescan();
    const double release_ms = ms_since(t0);
    EXPECT_FALSE(probe->attached_to(kTarget));
    EXPECT_EQ(probe->usdt_links(), 0u);
    t0 = std::chrono::steady_clock::now();
    probe->wait_for_releases();
    const double closed_ms = release_ms + ms_since(t0);
    EXPECT_EQ(probe->usdt_spec_ids(), 0u);
    std::cout << "[ figure   ] " << (multi ? "uprobe_multi" : "perf-event uprobes") << ": " << links
              << " links released in " << release_ms << " ms (caller), closed after " << closed_ms
              << " ms\n";
    probe->stop();
  }
}

}  // namespace tailcause::testing
