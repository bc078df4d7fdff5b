// SPDX-License-Identifier: Apache-2.0
// The tenant and agent of a recipe span (a thread with no SDK request): the identity rules'
// answer for its process (probes.attrib.identity, core/config/identity_rules.h), else its cgroup,
// else its process name. Reads /proc/PID/cmdline and environ only when a rule needs them, and
// caches the answer per (process, cgroup) so a span costs a map lookup.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/config/identity_rules.h"
#include "core/record/stage_record.h"

namespace tailcause::probes {

class CgroupNames;

class RecipeIdentity {
 public:
  void configure(core::IdentityRules rules) {
    rules_ = std::move(rules);
    cache_.clear();
  }
  // Fills r.id.tenant / agent of a synthetic span (r.id.tenant holds the process name).
  void apply(core::StageRecord& r, CgroupNames* cgroups);
  void forget(uint32_t pid);  // the process exited

 private:
  struct Answer {
    std::string tenant, agent;  // empty: keep the default
  };
  core::IdentityRules rules_;
  std::map<std::pair<uint32_t, uint64_t>, Answer> cache_;  // (pid, cgroup id)
};

}  // namespace tailcause::probes
