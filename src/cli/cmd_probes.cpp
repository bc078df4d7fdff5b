// SPDX-License-Identifier: Apache-2.0
// `tailcause probes`: the kernel features found and whether each family loads and attaches.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "daemon/family_check.h"

namespace tailcause::cli {

int print_probes(const CommonOptions& options, bool json) {
  const auto startup = daemon::prepare(options);
  const auto check = daemon::check_families(startup);
  const auto& statuses = check.families;

  bool any_failed = false;
  for (const auto& s : statuses) any_failed = any_failed || (s.enabled && !s.attached);
  // A recipe whose library is mapped but lacks the symbol is broken, not merely idle.
  for (const auto& r : check.recipes) any_failed = any_failed || r.state == "symbol_missing";
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
    out["recipes"] = nlohmann::json::array();
    for (const auto& r : check.recipes) {
      out["recipes"].push_back({{"library", r.library},
                                {"symbol", r.symbol},
                                {"state", r.state},
                                {"attached_files", r.attached_files},
                                {"calls", r.calls},
                                {"spans", r.spans},
                                {"files", r.files},
                                {"why", r.why}});
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
    if (!check.recipes.empty()) {
      // States: attached, symbol_missing (FAILED: the library lacks it), library_mismatch (a
      // process maps a file that looks like the runtime but no glob matches it: see the log),
      // library_unmapped (no running process maps it yet; attached when one does).
      fmt::print("Recipes (library symbol: state, files, calls, spans)\n");
      for (const auto& r : check.recipes) {
        fmt::print("  {} {}: {}{}, {} file{}, {} calls, {} spans\n", r.library, r.symbol,
                   r.state == "symbol_missing" ? "FAILED " : "", r.state, r.attached_files,
                   r.attached_files == 1 ? "" : "s", r.calls, r.spans);
        for (const auto& f : r.files) fmt::print("      in {}\n", f);
        if (r.files.empty() && !r.why.empty()) fmt::print("      {}\n", r.why);
      }
    }
  }
  return any_failed ? 1 : 0;
}

}  // namespace tailcause::cli
