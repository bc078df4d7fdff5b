// SPDX-License-Identifier: Apache-2.0
#include "export/glitch_listing.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string_view>

#include "core/detect/verdict.h"

namespace tailcause::exporter {
namespace {

// The components in core::Component order, named as everywhere else, with their journal values.
std::vector<std::pair<const char*, double>> components_of(const GlitchComponents& c) {
  std::vector<std::pair<const char*, double>> out;
  for (core::Component k : core::kAllComponents) out.emplace_back(core::component_name(k), c[k]);
  return out;
}

std::string wall_text(double seconds) {
  return seconds > 0 ? core::format_duration(static_cast<uint64_t>(seconds * 1e9 + 0.5)) : "-";
}

}  // namespace

std::string format_local_time(int64_t unix_ns) {
  // Floor division, so times before 1970 keep a non-negative millisecond part.
  int64_t secs = unix_ns / 1'000'000'000;
  int64_t rem = unix_ns % 1'000'000'000;
  if (rem < 0) rem += 1'000'000'000, --secs;
  const time_t t = static_cast<time_t>(secs);
  struct tm local {};
  if (!localtime_r(&t, &local)) return fmt::format("@{}", unix_ns);
  char date[32], zone[8];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &local);
  std::strftime(zone, sizeof zone, "%z", &local);  // "+0200"
  // ISO 8601 extended: "+02:00". Formatted rather than string::insert'ed, which GCC 12's
  // -Wrestrict misreads (a false positive in <char_traits> at -O2).
  const std::string_view z = zone;
  if (z.size() == 5)
    return fmt::format("{}.{:03}{}:{}", date, rem / 1'000'000, z.substr(0, 3), z.substr(3));
  return fmt::format("{}.{:03}{}", date, rem / 1'000'000, z);
}

std::string render_glitch_table(const std::vector<GlitchRow>& rows, const std::string& what) {
  if (rows.empty()) return fmt::format("no glitches{}\n", what.empty() ? "" : " " + what);
  size_t tenant_w = 6, stage_w = 5, cause_w = 5;
  for (const auto& r : rows) {
    tenant_w = std::max(tenant_w, r.tenant.size());
    stage_w = std::max(stage_w, r.stage.size());
    cause_w = std::max(cause_w, r.cause.size());
  }
  std::string out = fmt::format("{} glitch{}{}, newest first\n", rows.size(),
                                rows.size() == 1 ? "" : "es", what.empty() ? "" : " " + what);
  out += fmt::format("{:<29} {:<{}} {:<{}} {:>8}  {:<{}} {}\n", "TIME", "TENANT", tenant_w, "STAGE",
                     stage_w, "WALL", "CAUSE", cause_w, "TRACE");
  for (const auto& r : rows) {
    out += fmt::format("{:<29} {:<{}} {:<{}} {:>8}  {:<{}} {}\n", format_local_time(r.time_ns),
                       r.tenant, tenant_w, r.stage, stage_w, wall_text(r.wall_seconds), r.cause,
                       cause_w, r.trace_id.empty() ? "-" : r.trace_id);
    const std::string& why = r.evidence.empty() ? r.verdict : r.evidence;
    if (!why.empty()) out += fmt::format("    {}\n", why);
  }
  return out;
}

nlohmann::json glitch_rows_json(const std::vector<GlitchRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json components = nlohmann::json::object();
    for (const auto& [name, seconds] : components_of(r.components)) components[name] = seconds;
    out.push_back({{"id", r.id},
                   {"batch", r.batch},
                   {"time_ns", r.time_ns},
                   {"time", format_local_time(r.time_ns)},
                   {"tenant", r.tenant},
                   {"agent", r.agent},
                   {"stage", r.stage},
                   {"wall_seconds", r.wall_seconds},
                   {"components", std::move(components)},
                   {"page_cache_misses", r.page_cache_misses},
                   {"cause", r.cause},
                   {"verdict", r.verdict},
                   {"evidence", r.evidence},
                   {"trace_id", r.trace_id}});
  }
  return out;
}

}  // namespace tailcause::exporter
