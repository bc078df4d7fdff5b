// SPDX-License-Identifier: Apache-2.0
// `tailcause probes`: the kernel features found and whether each family loads and attaches.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "daemon/family_check.h"

namespace tailcause::cli {

int print_probes(const CommonOptions& options, bool json) {
  const auto startup = daemon::prepare(options);
  const auto statuses = daemon::check_families(startup);

  bool any_failed = false;
  for (const auto& s : statuses) any_failed = any_failed || (s.enabled && !s.attached);
  if (json) {
    nlohmann::json out;
    for (const auto& f : startup.features.list) {
      out["features"].push_back(
          {{"name", f.name}, {"available", f.available}, {"detail", f.detail}});
    }
    out["cgroup"] = startup.layout.describe();
    for (const auto& s : statuses) {
      out["families"].push_back(
          {{"name", s.name}, {"enabled", s.enabled}, {"attached", s.attached}, {"error", s.error}});
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("Kernel features\n");
    for (const auto& f : startup.features.list) {
      fmt::print("  {:<16} {:<4} {}\n", f.name, f.available ? "yes" : "no", f.detail);
    }
    fmt::print("Cgroups\n  {}\n", startup.layout.describe());
    fmt::print("Probe families\n");
    for (const auto& s : statuses) {
      const char* state = !s.enabled ? "disabled" : (s.attached ? "attached" : "FAILED");
      fmt::print("  {:<10} {:<9} {}\n", s.name, state, s.attached ? "" : s.error);
    }
  }
  return any_failed ? 1 : 0;
}

}  // namespace tailcause::cli
