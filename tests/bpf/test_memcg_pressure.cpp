// SPDX-License-Identifier: Apache-2.0
// Root test of memory cgroup pressure (memory family): a child reads a file far larger than its
// memory cgroup's limit, so the kernel must reclaim the cgroup's page cache over and over; the
// BPF side times that reclaim per memory cgroup, and the evidence board gets it as a rate next
// to the cgroup's limit. A sibling cgroup without a limit reads a file as large and reclaims
// nothing.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "probes/memcg_pressure.h"
#include "probes/memory_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

constexpr size_t kFileBytes = 64u << 20;
constexpr uint64_t kLimitBytes = 16u << 20;

// A memory cgroup of the memory hierarchy (v1 memory mount or unified), removed at the end.
class MemoryCgroup {
 public:
  MemoryCgroup(const probes::CgroupLayout& layout, const std::string& leaf)
      : name_("/" + leaf + "-" + std::to_string(getpid())), dir_(layout.root + name_) {
    mkdir(dir_.c_str(), 0755);
    v1_ = layout.version == probes::CgroupLayout::Version::V1;
  }
  ~MemoryCgroup() {
    for (int i = 0; i < 50 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool limit(uint64_t bytes) {
    std::ofstream(dir_ + (v1_ ? "/memory.limit_in_bytes" : "/memory.max")) << bytes;
    return probes::read_memory_use(dir_).limit_bytes == bytes;
  }
  void enter() { std::ofstream(dir_ + "/cgroup.procs") << getpid(); }
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string name_, dir_;
  bool v1_ = true;
};

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
  const double node_before = node_reclaimed_bytes();
  const uint64_t start = probes::monotonic_ns();
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
  const uint64_t end = probes::monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  probe.tick(ctx);
  const double node = node_reclaimed_bytes() - node_before;
  unlink(path_a.c_str());
  unlink(path_b.c_str());
  ASSERT_TRUE(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0) << "limited reader: " << status_a;
  ASSERT_TRUE(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0) << "free reader: " << status_b;

  core::MetricSet m;
  probe.collect(m);
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
}

}  // namespace
}  // namespace tailcause::testing
