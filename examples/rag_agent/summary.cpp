// SPDX-License-Identifier: Apache-2.0
#include "summary.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace rag {

void print_summary(const nlohmann::json& report) {
  static const char* rows[] = {"prompt", "embedding", "retrieval", "generation",
                               "tool",   "response",  "queue",     "request"};
  fmt::print("\n{:<12} {:<11} {:>8} {:>7} {:>10} {:>10}\n", "tenant", "stage", "count", "errors",
             "p50 ms", "p99 ms");
  for (const auto& [tenant, t] : report.at("tenants").items()) {
    if (t.contains("error")) {
      fmt::print("{:<12} error: {}\n", tenant, t["error"].get<std::string>());
      continue;
    }
    for (const char* name : rows) {
      if (!t["stages"].contains(name)) continue;
      const auto& s = t["stages"][name];
      fmt::print("{:<12} {:<11} {:>8} {:>7} {:>10.2f} {:>10.2f}\n", tenant, name,
                 s["count"].get<uint64_t>(), s["errors"].get<uint64_t>(),
                 1e3 * s["p50_seconds"].get<double>(), 1e3 * s["p99_seconds"].get<double>());
    }
  }
  fmt::print("\n");
  for (const auto& [tenant, t] : report.at("tenants").items()) {
    if (t.contains("error")) continue;
    const auto& r = t["requests"];
    const auto& c = t["cache"];
    fmt::print(
        "tenant {}: {} offered, {} completed, {} failed, {} abandoned at shutdown, {} dropped; "
        "{:.1f} ms CPU per "
        "request; cache {} hit / {} miss / {} stale; throttled in {} of {} periods{}\n",
        tenant, r["offered"].get<uint64_t>(), r["completed"].get<uint64_t>(),
        r["failed"].get<uint64_t>(), r["abandoned"].get<uint64_t>(), r["dropped"].get<uint64_t>(),
        1e3 * t["cpu_seconds_per_request"].get<double>(), c["hit"].get<uint64_t>(),
        c["miss"].get<uint64_t>(), c["stale"].get<uint64_t>(),
        t["throttle"]["throttled_periods"].get<uint64_t>(),
        t["throttle"]["periods"].get<uint64_t>(),
        t["cgroup"].get<std::string>().empty() ? " (shared cgroup)" : "");
  }
  std::fflush(stdout);
}

}  // namespace rag
