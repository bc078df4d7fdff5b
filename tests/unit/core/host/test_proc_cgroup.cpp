// SPDX-License-Identifier: Apache-2.0
// /proc/PID/cgroup parsing: the memory controller's cgroup on v1, hybrid and v2 hosts.
#include <gtest/gtest.h>

#include "core/host/proc_cgroup.h"

namespace tailcause::core {
namespace {

TEST(ProcCgroup, HybridHostNamesTheV1MemoryHierarchy) {
  const char* text =
      "8:pids:/\n4:memory:/agents/ta\n2:cpu,cpuacct:/agents/ta\n1:name=systemd:/\n0::/\n";
  EXPECT_EQ(memory_cgroup_of(text), "/agents/ta");
}

TEST(ProcCgroup, MemoryAmongSeveralControllers) {
  EXPECT_EQ(memory_cgroup_of("3:blkio,memory:/x/y\n"), "/x/y");
  EXPECT_EQ(memory_cgroup_of("3:memoryx:/wrong\n0::/right\n"), "/right");
}

TEST(ProcCgroup, PureV2UsesTheUnifiedLine) {
  EXPECT_EQ(memory_cgroup_of("0::/kubepods.slice/pod1:abc\n"), "/kubepods.slice/pod1:abc");
}

TEST(ProcCgroup, GarbageGivesNothing) {
  EXPECT_FALSE(memory_cgroup_of(""));
  EXPECT_FALSE(memory_cgroup_of("no colons here\n"));
  EXPECT_FALSE(memory_cgroup_of("4:memory:relative\n"));
  EXPECT_FALSE(memory_cgroup_of("1:memory\n"));
  EXPECT_FALSE(memory_cgroup_of(std::string_view("\0\0:\0", 4)));
}

TEST(ProcCgroup, Parents) {
  EXPECT_EQ(parent_cgroup("/a/b"), "/a");
  EXPECT_EQ(parent_cgroup("/a"), "/");
  EXPECT_FALSE(parent_cgroup("/"));
  EXPECT_FALSE(parent_cgroup(""));
}

}  // namespace
}  // namespace tailcause::core
