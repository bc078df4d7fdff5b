// SPDX-License-Identifier: Apache-2.0
// Root tests of the feature probes that decide by trying, where a kernel's version or
// bpftool's report would mislead.
#include <sys/utsname.h>

#include <cstdio>

#include "probes/features.h"
#include "support.h"

namespace tailcause::testing {
namespace {

// Linux 6.10 made a uprobe_multi link's pid filter match every thread of the process (6.6 to
// 6.9 matched the main thread only; stable kernels may have the fix too, so only 6.10 and
// later have a known answer). The probe calls a function from two threads and counts.
TEST(Features, UprobeMultiPidFilterIsTriedOnTwoThreads) {
  REQUIRE_ROOT();
  const probes::Features f = probes::probe_features("");
  if (!f.uprobe_multi) GTEST_SKIP() << "no uprobe_multi links on this kernel";
  bool listed = false;
  for (const auto& feature : f.list) {
    if (feature.name == "uprobe_multi_pid_filter") {
      listed = true;
      std::printf("uprobe_multi_pid_filter: %s %s\n", feature.available ? "yes" : "no",
                  feature.detail.c_str());
    }
  }
  EXPECT_TRUE(listed) << "`tailcause probes` does not show the pid filter probe";
  utsname u{};
  uname(&u);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  if (major > 6 || (major == 6 && minor >= 10)) {
    EXPECT_TRUE(f.uprobe_multi_pid_filter) << "Linux " << u.release << " filters by process";
  }
}

}  // namespace
}  // namespace tailcause::testing
