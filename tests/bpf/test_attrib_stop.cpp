// Stopping the attribution family with many uprobes attached: every perf event it opened is
// gone when stop() returns (link_teardown.h closes them in parallel). Prints the stop time.
#include "attrib_fixture.h"
#include "probes/link_teardown.h"

namespace tailcause::testing {

TEST_F(AttribTest, StopDetachesEveryUprobe) {
  const size_t before = probes::perf_event_fds();
  probe->start(ctx);
  ASSERT_TRUE(probe->attached_to(kTarget));
  const size_t opened = probes::perf_event_fds() - before;
  // One uprobe per probe call site in attrib_target, plus the family's own perf events.
  EXPECT_GE(opened, 30u);
  const auto t0 = std::chrono::steady_clock::now();
  probe->stop();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ figure   ] stop with " << opened << " perf events (uprobes) open: " << ms
            << " ms\n";
  EXPECT_EQ(probes::perf_event_fds(), before);
  EXPECT_FALSE(probe->attached_to(kTarget));
}

}  // namespace tailcause::testing
