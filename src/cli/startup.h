// The checks every command that loads probes makes first, in an order that leaves nothing
// half-started: configuration, privileges, BTF, cgroup layout.
#pragma once

#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/config.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"

namespace tailcause::cli {

struct Startup {
  core::Config config;
  probes::Features features;
  probes::CgroupLayout layout;
};

// Reads and validates the configuration file (or the defaults) with the flags applied.
// Throws core::ConfigError.
core::Config load_config(const CommonOptions& options);

// Prints a clear message to stderr and returns nullopt when something is missing.
std::optional<Startup> prepare(const CommonOptions& options);

}  // namespace tailcause::cli
