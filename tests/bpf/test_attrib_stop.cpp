// SPDX-License-Identifier: Apache-2.0
// Stopping the attribution family with many uprobes attached: every uprobe it placed is gone
// when stop() returns, on both attach paths. Prints the stop times and their ratio: the kernel
// tears perf-event uprobes down one at a time under its event_mutex, each waiting for a
// tracepoint grace period, while uprobe_multi links close in parallel, sharing grace periods.
#include "attrib_fixture.h"
#include "held_uprobes.h"

namespace tailcause::testing {

TEST_F(AttribTest, StopDetachesEveryUprobe) {
  std::map<bool, double> stop_ms;
  for (const bool multi : {true, false}) {
    if (multi && !ctx.features.uprobe_multi) continue;
    probes::Features f = ctx.features;
    f.uprobe_multi = multi;
    probes::ProbeContext c{f, config, names, signals};
    const KernelUprobes before = held_uprobes();
    probe->start(c);
    ASSERT_TRUE(probe->attached_to(kTarget));
    const KernelUprobes held = held_uprobes();
    // One uprobe per probe call site in attrib_target (perf events: plus the family's own).
    const size_t uprobes =
        held.multi_sites - before.multi_sites + held.perf_events - before.perf_events;
    EXPECT_GE(uprobes, 30u);
    const auto t0 = std::chrono::steady_clock::now();
    probe->stop();
    stop_ms[multi] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "[ figure   ] stop with " << uprobes << " uprobes ("
              << (multi ? "uprobe_multi links" : "perf events") << "): " << stop_ms[multi]
              << " ms\n";
    const KernelUprobes after = held_uprobes();
    EXPECT_EQ(after.perf_events, before.perf_events);
    EXPECT_EQ(after.multi_links, before.multi_links);
    EXPECT_FALSE(probe->attached_to(kTarget));
  }
  if (stop_ms.size() == 2 && stop_ms[true] > 0) {
    std::cout << "[ figure   ] stop: perf-event uprobes take " << stop_ms[false] / stop_ms[true]
              << "x the time of uprobe_multi links\n";
  }
}

}  // namespace tailcause::testing
