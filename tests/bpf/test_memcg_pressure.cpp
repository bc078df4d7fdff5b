// SPDX-License-Identifier: Apache-2.0
// Root test of memory cgroup pressure (memory family): a child reads a file far larger than its
// memory cgroup's limit, so the kernel must reclaim the cgroup's page cache over and over; the
// BPF side times that reclaim per memory cgroup, and the evidence board gets it as a rate next
// to the cgroup's limit. A sibling cgroup without a limit reads a file as large and reclaims
// nothing. The memory stall (PSI) the family reports with it, the cgroup's own (v2) or the
// node's (v1), is checked against the test's own reads of the same file around the run.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/host/clock.h"
#include "probes/memcg_pressure.h"
#include "probes/memory_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

constexpr size_t kFileBytes = 64u << 20;
constexpr uint64_t kLimitBytes = 16u << 20;

// Pages reclaim freed on the whole node so far: the kernel's own count (/proc/vmstat).
double node_reclaimed_bytes() {
  std::ifstream in("/proc/vmstat");
  std::string key;
  uint64_t v = 0, pages = 0;
  while (in >> key >> v) {
    if (key == "pgsteal_file" || key == "pgsteal_anon") pages += v;
  }
  return static_cast<double>(pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

// The "some" total (microseconds) of a pressure file, read here without the daemon's parser;
// nullopt without PSI (no file, or EOPNOTSUPP where the kernel has it off).
std::optional<uint64_t> stall_some_us(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  bool some = false;
  while (in >> word) {
    if (word == "some" || word == "full") some = word == "some";
    if (some && word.rfind("total=", 0) == 0) return std::stoull(word.substr(6));
  }
  return std::nullopt;
}

bool write_file(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::vector<char> chunk(1 << 20, 'x');
  bool ok = true;
  for (size_t done = 0; ok && done < kFileBytes; done += chunk.size()) {
    ok = write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size());
  }
  ok = ok && fsync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  close(fd);
  return ok;
}

// Child: joins the cgroup, then execs a shell that reads the whole file again and again for
// `seconds`. Exec first: a forked copy of this test process would copy-on-write its heap into
// the limited cgroup and could be OOM-killed there instead of reclaiming page cache.
pid_t spawn_reader(MemoryCgroup& cg, const std::string& path, int seconds) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  cg.enter();
  const std::string script = "end=$(( $(date +%s) + " + std::to_string(seconds) +
                             " )); while [ $(date +%s) -lt $end ]; do cat \"$0\" >/dev/null || "
                             "exit 2; done";
  execl("/bin/sh", "sh", "-c", script.c_str(), path.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

TEST(MemcgPressure, LimitReclaimIsTimedPerMemoryCgroupAndPostedAsEvidence) {
  REQUIRE_ROOT();
  const auto layout = probes::memory_cgroup_layout(host_layout());
  if (!layout) GTEST_SKIP() << "no memory controller on this host";
  // One file each: pages the free reader cached would be hits for the limited one, uncharged.
  const std::string stem = disk_scratch_dir() + "/memcg-" + std::to_string(getpid());
  const std::string path_a = stem + "-a.dat", path_b = stem + "-b.dat";
  ASSERT_TRUE(write_file(path_a)) << path_a << ": " << strerror(errno);
  ASSERT_TRUE(write_file(path_b)) << path_b << ": " << strerror(errno);

  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  probes::MemoryProbe probe;
  probe.start(ctx);

  MemoryCgroup limited(*layout, "tc-memcg-limited"), free(*layout, "tc-memcg-free");
  ASSERT_TRUE(limited.limit(kLimitBytes)) << limited.dir();
  // The pressure file the family must read for the limited cgroup: its own where it has one
  // (v2), else the node's (a v1 memory cgroup has none).
  const bool own_psi = access((limited.dir() + "/memory.pressure").c_str(), F_OK) == 0;
  const std::string psi_file =
      own_psi ? limited.dir() + "/memory.pressure" : std::string(probes::kNodeMemoryPressure);
  const auto psi_before = stall_some_us(psi_file);
  // The daemon's stall counter before the run: the node's, read by a first harvest (a cgroup's
  // own starts with the cgroup, just created: the test's read stands for it).
  probe.tick(ctx);
  core::MetricSet m0;
  probe.collect(m0);
  const double daemon_before_s =
      own_psi ? static_cast<double>(psi_before.value_or(0)) * 1e-6
              : sample_value(m0, "tailcause_memory_pressure_stall_seconds", {{"kind", "some"}})
                    .value_or(0);
  const double node_before = node_reclaimed_bytes();
  const uint64_t start = core::monotonic_ns();
  const pid_t a = spawn_reader(limited, path_a, 3);
  const pid_t b = spawn_reader(free, path_b, 3);
  // Ticks as the daemon's collector does (the family reads reclaim once a second).
  int status_a = -1, status_b = -1;
  while (waitpid(a, &status_a, WNOHANG) == 0 || waitpid(b, &status_b, WNOHANG) == 0) {
    probe.tick(ctx);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (status_a == -1) waitpid(a, &status_a, 0);
  if (status_b == -1) waitpid(b, &status_b, 0);
  const uint64_t end = core::monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  probe.tick(ctx);
  const double node = node_reclaimed_bytes() - node_before;
  core::MetricSet m;
  probe.collect(m);
  const auto psi_after = stall_some_us(psi_file);
  unlink(path_a.c_str());
  unlink(path_b.c_str());
  ASSERT_TRUE(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0) << "limited reader: " << status_a;
  ASSERT_TRUE(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0) << "free reader: " << status_b;

  // Each pass pushes 64 MiB through a 16 MiB limit: at least 48 MiB must be reclaimed.
  const double reclaimed =
      sample_value(m, "tailcause_memcg_reclaimed_bytes", {{"cgroup", limited.name()}}).value_or(0);
  EXPECT_GE(reclaimed, 40.0 * (1 << 20));
  // Independent measure: the kernel's node-wide count over the same time, against the sum of
  // every memory cgroup's series (reclaim elsewhere on the node is in both).
  double all = 0;
  for (const auto& f : m.families()) {
    if (f.name != "tailcause_memcg_reclaimed_bytes") continue;
    for (const auto& sample : f.samples) all += sample.value;
  }
  printf(
      "memcg reclaim: %.1f MiB by %s in %.1f s (%.1f MiB/s); all memory cgroups %.1f MiB, the "
      "kernel's /proc/vmstat %.1f MiB\n",
      reclaimed / (1 << 20), limited.name().c_str(), static_cast<double>(end - start) * 1e-9,
      reclaimed / (1 << 20) / (static_cast<double>(end - start) * 1e-9), all / (1 << 20),
      node / (1 << 20));
  EXPECT_NEAR(all, node, node * 0.1);
  EXPECT_GT(
      sample_value(m, "tailcause_memcg_reclaim_seconds", {{"cgroup", limited.name()}}).value_or(0),
      0);
  EXPECT_EQ(
      sample_value(m, "tailcause_memcg_reclaimed_bytes", {{"cgroup", free.name()}}).value_or(0), 0)
      << "a cgroup without a limit reclaims nothing";

  const auto e = signals.evidence.memory_between(limited.name(), start, end);
  ASSERT_TRUE(e) << "no reclaim evidence for " << limited.name();
  EXPECT_GT(e->reclaim_bytes_per_s(), 1.0 * (1 << 20));
  EXPECT_EQ(e->limit_bytes, kLimitBytes);
  EXPECT_FALSE(signals.evidence.memory_between(free.name(), start, end));

  // Memory stall (PSI). Without it on this kernel: no stall series and no stall evidence.
  if (!psi_before || !psi_after) {
    printf("memory stall: %s not readable (no PSI, or psi=0): not checked\n", psi_file.c_str());
    EXPECT_EQ(e->stall_scope, core::StallScope::none);
    EXPECT_TRUE(samples_of(m, "tailcause_memory_pressure_stall_seconds").empty());
    return;
  }
  // Limit reclaim runs inside the kernel's memstall section (try_charge_memcg), and the refaults
  // of the file's pages stall too: the limited reader stalls, and with it the node. (The node's
  // "some" is each CPU's stall weighted by its non-idle time, so on a node whose other CPUs are
  // busy it is a fraction of the reclaim time BPF measured: no ratio to that is asserted.) The
  // daemon read the same file between the test's two reads, so its figures lie within the
  // test's.
  const uint64_t outer_us = *psi_after - *psi_before;
  const double daemon_after_s =
      own_psi ? value(m, "tailcause_memcg_pressure_stall_seconds",
                      {{"cgroup", limited.name()}, {"kind", "some"}})
              : value(m, "tailcause_memory_pressure_stall_seconds", {{"kind", "some"}});
  const double daemon_us = (daemon_after_s - daemon_before_s) * 1e6;
  printf(
      "memory stall (%s, some): the test's reads %.1f ms, the daemon's counter %.1f ms, the "
      "evidence %.1f ms over %.1f s (%.0f%%); reclaim timed by BPF %.1f ms\n",
      psi_file.c_str(), static_cast<double>(outer_us) * 1e-3, daemon_us * 1e-3,
      static_cast<double>(e->stall_some_us) * 1e-3, e->seconds, e->stall_some_share() * 100,
      value(m, "tailcause_memcg_reclaim_seconds", {{"cgroup", limited.name()}}) * 1e3);
  EXPECT_EQ(e->stall_scope, own_psi ? core::StallScope::cgroup : core::StallScope::node);
  ASSERT_GT(outer_us, 0u) << "the thrash stalled no task on memory";
  // The counter's two reads bracket the whole run, each a tick from the test's own: nearly all
  // of the test's figure (measured: equal to 0.1 ms), never more (2 us of slack for the
  // counter's conversion to seconds and back).
  EXPECT_LE(daemon_us, static_cast<double>(outer_us) + 2);
  EXPECT_GE(daemon_us, 0.5 * static_cast<double>(outer_us));
  // The evidence covers the part of the run between the daemon's readings of the cgroup (from
  // its first harvest after the cgroup began to reclaim): some of it, never more than all.
  EXPECT_GT(e->stall_some_us, 0u);
  EXPECT_LE(e->stall_some_us, outer_us);
  if (own_psi) {
    EXPECT_FALSE(samples_of(m, "tailcause_memcg_pressure_stall_seconds").empty());
  } else {
    EXPECT_FALSE(
        find_sample(m, "tailcause_memcg_pressure_stall_seconds", {{"cgroup", limited.name()}}))
        << "a v1 memory cgroup has no pressure of its own to export";
  }
}

}  // namespace
}  // namespace tailcause::testing
