// SPDX-License-Identifier: Apache-2.0
#include "export/incident_listing.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/detect/verdict.h"
#include "export/glitch_listing.h"

namespace tailcause::exporter {
namespace {

std::string lasted(const IncidentRow& r) {
  return core::format_duration(r.end_ns > r.start_ns ? static_cast<uint64_t>(r.end_ns - r.start_ns)
                                                     : 0);
}

std::vector<std::string> split_stages(const std::string& stages) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= stages.size() && !stages.empty()) {
    const size_t comma = stages.find(',', at);
    out.push_back(stages.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

std::string render_incident_table(const std::vector<IncidentRow>& rows, const std::string& what) {
  if (rows.empty()) return fmt::format("no incidents{}\n", what.empty() ? "" : " " + what);
  size_t tenant_w = 6, stages_w = 6, cause_w = 5;
  for (const auto& r : rows) {
    tenant_w = std::max(tenant_w, r.tenant.size());
    stages_w = std::max(stages_w, r.stages.size());
    cause_w = std::max(cause_w, r.cause.size());
  }
  std::string out = fmt::format("{} incident{}{}, newest first\n", rows.size(),
                                rows.size() == 1 ? "" : "s", what.empty() ? "" : " " + what);
  out += fmt::format("{:<29} {:>9}  {:<{}} {:<{}} {:<{}} {:>7} {:>7} {:>6}\n", "START", "LASTED",
                     "TENANT", tenant_w, "STAGES", stages_w, "CAUSE", cause_w, "SLOWED", "MEDIAN",
                     "PEAK");
  for (const auto& r : rows) {
    out += fmt::format("{:<29} {:>9}  {:<{}} {:<{}} {:<{}} {:>7} {:>6.1f}x {:>5.1f}x\n",
                       format_local_time(r.start_ns), r.active ? "ongoing" : lasted(r), r.tenant,
                       tenant_w, r.stages, stages_w, r.cause, cause_w, r.slowed, r.median_ratio,
                       r.peak_ratio);
    if (!r.summary.empty()) out += fmt::format("    {}\n", r.summary);
  }
  return out;
}

nlohmann::json incident_rows_json(const std::vector<IncidentRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"id", r.id},
                   {"start_ns", r.start_ns},
                   {"end_ns", r.end_ns},
                   {"start", format_local_time(r.start_ns)},
                   {"end", format_local_time(r.end_ns)},
                   {"active", r.active},
                   {"tenant", r.tenant},
                   {"stage", r.stage},
                   {"stages", split_stages(r.stages)},
                   {"cause", r.cause},
                   {"cause_share", r.cause_share},
                   {"slowed", r.slowed},
                   {"median_ratio", r.median_ratio},
                   {"peak_ratio", r.peak_ratio},
                   {"baseline_seconds", r.baseline_seconds},
                   {"summary", r.summary}});
  }
  return out;
}

}  // namespace tailcause::exporter
