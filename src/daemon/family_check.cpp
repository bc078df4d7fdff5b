// SPDX-License-Identifier: Apache-2.0
#include "daemon/family_check.h"

namespace tailcause::daemon {

std::vector<probes::FamilyStatus> check_families(const Startup& startup) {
  probes::ProbeSet set(startup.features, startup.layout);
  set.apply(startup.config);
  auto statuses = set.status();
  set.stop_all();
  return statuses;
}

}  // namespace tailcause::daemon
