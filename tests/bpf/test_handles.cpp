// SPDX-License-Identifier: Apache-2.0
// Root tests of the probe families' resource handling: starts that fail halfway and
// start/stop cycles give back every descriptor they took (skeletons, links, perf events,
// ring buffers), and the parsed BTF is shared and dropped by the probe set.
#include <dirent.h>

#include <memory>
#include <string>

#include "core/config/config.h"
#include "probes/families.h"
#include "probes/attrib_probe.h"
#include "probes/probe_set.h"
#include "support.h"

namespace tailcause::testing {
namespace {

size_t open_fds() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (d && readdir(d)) ++n;
  if (d) closedir(d);
  return n;
}

// A binary that exists but carries no tailcause probes: the start fails after the object is
// loaded, its programs attached and its ring buffer opened.
TEST(Handles, FailedAttribStartLeaksNoDescriptor) {
  REQUIRE_ROOT();
  core::Config config;
  config.attrib.binary = "/bin/true";
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  const size_t before = open_fds();
  for (int i = 0; i < 3; ++i) {
    probes::AttribProbe probe;
    EXPECT_THROW(probe.start(ctx), probes::ProbeError);
    EXPECT_EQ(probe.event_fd(), -1) << "a failed start keeps nothing";
  }
  EXPECT_EQ(open_fds(), before);
}

// Every family the default configuration enables, started and stopped: nothing left open.
TEST(Handles, StartStopCyclesLeakNoDescriptor) {
  REQUIRE_ROOT();
  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  for (const auto& entry : probes::known_families()) {
    if (!entry.enabled(config)) continue;
    auto family = entry.make();
    family->start(ctx);  // warm-up: libbpf and the logger keep a few things for good
    family->stop();
    const size_t before = open_fds();
    for (int i = 0; i < 2; ++i) {
      family->start(ctx);
      family->stop();
    }
    EXPECT_EQ(open_fds(), before) << entry.name;
  }
}

// The probe set parses the BTF for its loaders and drops it for every copy of its features
// once they are started.
TEST(Handles, ProbeSetDropsTheSharedBtfAfterStarting) {
  REQUIRE_ROOT();
  probes::Features features = probes::probe_features("");
  ASSERT_NE(features.parsed_btf.get(), nullptr) << "the features probe parsed it";
  const probes::Features copy = features;
  core::Config config;
  config.attrib.enabled = false;
  {
    probes::ProbeSet set(features, host_layout());
    set.apply(config);
    set.stop_all();
  }
  EXPECT_EQ(copy.parsed_btf.get(), nullptr) << "no copy keeps the parsed BTF alive";
}

}  // namespace
}  // namespace tailcause::testing
