// SPDX-License-Identifier: Apache-2.0
#include "probes/families.h"

#include "probes/attrib_probe.h"
#include "probes/block_probe.h"
#include "probes/memory_probe.h"
#include "probes/sched_probe.h"
#include "probes/tcp_probe.h"
#include "probes/throttle_probe.h"

namespace tailcause::probes {
namespace {

// Settings every family depends on: label and series budgets, cgroup layout, BTF.
bool same_common(const core::Config& a, const core::Config& b) {
  return a.top_k == b.top_k && a.limits == b.limits && a.cgroup == b.cgroup && a.btf == b.btf;
}

}  // namespace

const std::vector<FamilyEntry>& known_families() {
  static const std::vector<FamilyEntry> families = {
      {"sched", make_sched_probe, [](const core::Config& c) { return c.sched.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.sched == b.sched;
       }},
      {"throttle", make_throttle_probe, [](const core::Config& c) { return c.throttle.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.throttle == b.throttle;
       }},
      {"tcp", make_tcp_probe, [](const core::Config& c) { return c.tcp.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.tcp == b.tcp;
       }},
      {"memory", make_memory_probe, [](const core::Config& c) { return c.memory.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.memory == b.memory;
       }},
      {"block", make_block_probe, [](const core::Config& c) { return c.block.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.block == b.block;
       }},
      {"attrib", make_attrib_probe, [](const core::Config& c) { return c.attrib.enabled; },
       [](const core::Config& a, const core::Config& b) {
         return same_common(a, b) && a.attrib == b.attrib;
       }},
  };
  return families;
}

}  // namespace tailcause::probes
