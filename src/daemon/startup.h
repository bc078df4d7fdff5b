// SPDX-License-Identifier: Apache-2.0
// The checks every command that loads probes makes first, in an order that leaves nothing
// half-started: configuration, privileges, BTF, cgroup layout.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/config/config.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"

namespace tailcause::daemon {

// Where the configuration comes from: a file (or the defaults) and the flags that override it.
// Kept as given, so a reload reads the same file and applies the same flags again.
struct StartOptions {
  std::string config_path;  // empty: built-in defaults
  std::string listen;       // overrides the configuration's listen address
  std::string btf;          // overrides the configuration's BTF path
  uint32_t pid = 0;         // attrib: only this process
  std::string binary;       // attrib: only this executable or library
};

// A start that cannot go on (bad configuration, missing privileges or BTF, an address or file
// that cannot be used). The message is one line for the user; the executable exits 2.
struct StartupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Startup {
  core::Config config;
  probes::Features features;
  probes::CgroupLayout layout;
};

// Reads and validates the configuration file (or the defaults) with the flags applied.
// Throws core::ConfigError.
core::Config load_config(const StartOptions& options);

// Throws StartupError naming what is missing.
Startup prepare(const StartOptions& options);

}  // namespace tailcause::daemon
