// Stopping the attribution family with many uprobes attached: every perf event it opened is
// gone when stop() returns. Prints the stop time (the kernel tears uprobe perf events down one
// at a time under its event_mutex, each waiting for a tracepoint grace period).
#include <dirent.h>

#include "attrib_fixture.h"

namespace tailcause::testing {
namespace {

// Perf event descriptors this process holds (/proc/self/fd/N -> anon_inode:[perf_event]).
size_t perf_event_fds() {
  size_t n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return 0;
  while (const dirent* e = readdir(dir)) {
    char target[64];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
    if (len > 0 && std::string(target, len) == "anon_inode:[perf_event]") ++n;
  }
  closedir(dir);
  return n;
}

}  // namespace

TEST_F(AttribTest, StopDetachesEveryUprobe) {
  const size_t before = perf_event_fds();
  probe->start(ctx);
  ASSERT_TRUE(probe->attached_to(kTarget));
  const size_t opened = perf_event_fds() - before;
  // One uprobe per probe call site in attrib_target, plus the family's own perf events.
  EXPECT_GE(opened, 30u);
  const auto t0 = std::chrono::steady_clock::now();
  probe->stop();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ figure   ] stop with " << opened << " perf events (uprobes) open: " << ms
            << " ms\n";
  EXPECT_EQ(perf_event_fds(), before);
  EXPECT_FALSE(probe->attached_to(kTarget));
}

}  // namespace tailcause::testing
