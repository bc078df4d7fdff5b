// SPDX-License-Identifier: Apache-2.0
// `tailcause probes`' check: loads and attaches every family the configuration enables, notes
// whether each one did (and why not), and detaches them all again.
#pragma once

#include <vector>

#include "daemon/startup.h"
#include "probes/probe_set.h"

namespace tailcause::daemon {

std::vector<probes::FamilyStatus> check_families(const Startup& startup);

}  // namespace tailcause::daemon
