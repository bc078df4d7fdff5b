// SPDX-License-Identifier: Apache-2.0
// `tailcause probes`' check: loads and attaches every family the configuration enables, notes
// whether each one did (and why not), and detaches them all again.
#pragma once

#include <string>
#include <vector>

#include "core/record/metrics.h"
#include "daemon/startup.h"
#include "probes/probe_set.h"

namespace tailcause::daemon {

// One uprobe recipe as the attach left it (from the attribution family's own series).
struct RecipeCheck {
  std::string library, symbol, state;  // state: core::recipe_state_name()
  uint64_t attached_files = 0, calls = 0, spans = 0;
  std::vector<std::string> files;  // where it is attached (its glob or its symbol found them)
  std::string why;                 // why it is attached nowhere
};

struct FamilyCheck {
  std::vector<probes::FamilyStatus> families;
  std::vector<RecipeCheck> recipes;
};

FamilyCheck check_families(const Startup& startup);

// The recipes' rows from a scrape (tailcause_recipe_status / _attached_files / _calls /
// _spans), in the order of their status series.
std::vector<RecipeCheck> recipe_checks(const core::MetricSet& metrics);

}  // namespace tailcause::daemon
