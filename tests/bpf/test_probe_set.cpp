// SPDX-License-Identifier: Apache-2.0
// Root tests of the probe set's reload: a reload that restarts every family loads and detaches
// outside the lock that scrapes and the collector take, so both go on while it runs.
#include <atomic>
#include <cstdio>
#include <chrono>
#include <thread>

#include "core/config/config.h"
#include "core/record/metrics.h"
#include "core/record/schema.h"
#include "probes/probe_set.h"
#include "support.h"

namespace tailcause::testing {
namespace {

size_t attached_families(const core::MetricSet& set) {
  size_t n = 0;
  for (const auto& s : samples_of(set, core::metric::kProbeAttached)) {
    if (s.value == 1) ++n;
  }
  return n;
}

TEST(ProbeSet, ScrapesAndTheCollectorGoOnDuringAReload) {
  REQUIRE_ROOT();
  core::Config config;
  config.attrib.enabled = false;  // needs an SDK binary; the other five families load here
  probes::ProbeSet set(host_features(), host_layout());
  set.apply(config);
  core::MetricSet first;
  set.collect(first);
  const size_t families = attached_families(first);
  ASSERT_GE(families, 3u) << "too few families load on this host to test a reload";

  std::atomic<bool> stop_collector = false;
  std::thread collector([&] {
    while (!stop_collector) set.poll(10);
  });

  // A new label budget restarts every family: each is detached, then loaded and verified again,
  // which takes hundreds of milliseconds against a scrape's few.
  config.top_k += 1;
  std::atomic<bool> reloading = true;
  std::thread reload([&] {
    set.apply(config);
    reloading = false;
  });
  size_t scrapes_during_reload = 0;
  while (reloading) {
    core::MetricSet scrape;
    set.collect(scrape);
    if (reloading) ++scrapes_during_reload;
  }
  reload.join();
  stop_collector = true;
  collector.join();
  std::printf("figure: %zu scrapes answered during a reload that restarted %zu families\n",
              scrapes_during_reload, families);

  // Holding the lock through the reload, as before, let at most the one scrape that was waiting
  // finish while the reload thread was still returning.
  EXPECT_GE(scrapes_during_reload, 10u) << "scrapes waited for the reload";
  core::MetricSet after;
  set.collect(after);
  EXPECT_EQ(attached_families(after), families) << "the reload lost a family";
  for (const auto& status : set.status()) {
    if (status.enabled) {
      EXPECT_EQ(status.generation, 2u) << status.name << " was not restarted";
    }
  }
  set.stop_all();
  core::MetricSet stopped;
  set.collect(stopped);
  EXPECT_EQ(attached_families(stopped), 0u);
}

}  // namespace
}  // namespace tailcause::testing
