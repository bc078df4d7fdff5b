// SPDX-License-Identifier: Apache-2.0
// Shared fixtures for the root tests: real cgroups, real child processes, metric look-ups.
#pragma once

#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/types.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/record/metrics.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"

namespace tailcause::testing {

// Skips without root; the test main turns a skip into a failure when running as root.
#define REQUIRE_ROOT()                                                       \
  do {                                                                       \
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)"; \
  } while (0)

// The layout the daemon itself would pick with the default configuration.
const probes::CgroupLayout& host_layout();
const probes::Features& host_features();

// A real cgroup below <root>/tailcause-test-<pid>/, removed (members killed) when destroyed.
class TestCgroup {
 public:
  explicit TestCgroup(const std::string& leaf);
  ~TestCgroup();
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  // Limits the cgroup to `cpus` CPUs per 100 ms period (v1 cfs quota or v2 cpu.max).
  void set_cpu_quota(double cpus);
  void add(pid_t pid);
  const std::string& name() const { return name_; }  // as CgroupNames reports it
  const std::string& dir() const { return dir_; }

 private:
  std::string name_, dir_;
  std::vector<pid_t> members_;
};

// A memory cgroup of the memory hierarchy (v1 memory mount or unified), removed at the end.
class MemoryCgroup {
 public:
  MemoryCgroup(const probes::CgroupLayout& layout, const std::string& leaf);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // Sets its limit; false when the kernel did not take it.
  bool limit(uint64_t bytes);
  void enter();  // the calling process joins it
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string name_, dir_;
  bool v1_ = true;
};

// Forks a child that moves itself into `cgroup` (if any), pins itself to `cpu` (if any) and
// then runs `body` (default: spin forever). Returns its pid; kill with stop_child().
pid_t spawn_child(const TestCgroup* cgroup, std::optional<int> cpu,
                  std::function<void()> body = {});
void stop_child(pid_t pid);

// Finds the sample of family `name` whose labels include all of `want`; nullptr if none.
const core::Sample* find_sample(const core::MetricSet& set, const std::string& name,
                                const core::Labels& want);
// The value of the sample of family `name` whose labels include all of `want`; nullopt when
// there is none. For a series whose absence is a legitimate "nothing counted": value_or(0).
std::optional<double> sample_value(const core::MetricSet& set, const std::string& name,
                                   const core::Labels& want);
// The same for a series that must be there: a missing one fails the test, naming the series,
// and reads as NaN, which no comparison accepts.
double value(const core::MetricSet& set, const std::string& name, const core::Labels& want);
// All samples of a family (empty if absent).
std::vector<core::Sample> samples_of(const core::MetricSet& set, const std::string& name);

// Directory for test files on a real disk (not tmpfs), so the page cache matters.
std::string disk_scratch_dir();

// The kernel's counters of a loaded program: its runs and their time (counted while a
// bpf_enable_stats() descriptor is held or kernel.bpf_stats_enabled is set) and the runs it
// skipped because it was already running on the CPU. A failure to read them fails the test (a
// zero run count would pass a check that runs stay few) and returns zeros.
bpf_prog_info program_info(const bpf_program* prog);

}  // namespace tailcause::testing
