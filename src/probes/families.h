// SPDX-License-Identifier: Apache-2.0
// The node-level probe families tailcause knows, and which part of the configuration each
// one depends on (so a reload restarts only the families whose settings changed).
#pragma once

#include <memory>
#include <vector>

#include "core/config/config.h"
#include "probes/probe_family.h"

namespace tailcause::probes {

struct FamilyEntry {
  const char* name;
  std::unique_ptr<ProbeFamily> (*make)();
  bool (*enabled)(const core::Config&);
  // True when a running instance can keep running under the new configuration.
  bool (*same_settings)(const core::Config& before, const core::Config& after);
};

const std::vector<FamilyEntry>& known_families();

}  // namespace tailcause::probes
