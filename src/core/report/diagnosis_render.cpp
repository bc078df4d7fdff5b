// SPDX-License-Identifier: Apache-2.0
// The diagnosis as terminal tables and as one sentence (diagnosis.h); diagnosis_json.cpp has it
// as JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/report/diagnosis.h"
#include "core/detect/verdict.h"

namespace tailcause::core {
namespace {

using Row = std::vector<std::string>;

// Columns padded to their widest cell, two spaces apart, under an upper-case header.
std::string table(const Row& header, const std::vector<Row>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  auto line = [&](const Row& r) {
    std::string out = " ";
    for (size_t i = 0; i < r.size(); ++i) {
      out += " ";
      out += i + 1 == r.size() ? r[i] : fmt::format("{:<{}} ", r[i], width[i]);
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string section(const std::string& title, const std::string& body) {
  return fmt::format("\n{}\n{}", title, body.empty() ? "  none seen\n" : body);
}

std::string seconds_text(double s) {
  return s > 0 ? format_duration(static_cast<uint64_t>(s * 1e9 + 0.5)) : "0";
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100); }

std::string optional_seconds(const std::optional<double>& s) { return s ? seconds_text(*s) : "-"; }

std::string glitch_sentence(const TenantVerdict& v) {
  if (v.stage == GlitchDetector::kRequestStage)
    return fmt::format(
        "tenant {}'s requests were slow ({} over the request SLO or their P99) "
        "while no stage stood out",
        v.tenant, v.count);
  std::string which;
  if (v.tenant_glitches <= 1)
    which = "its one glitch was";
  else if (v.count == v.tenant_glitches)
    which = fmt::format("all {} of its glitches were", v.count);
  else
    which = fmt::format("{} of its {} glitches were", v.count, v.tenant_glitches);
  return fmt::format("tenant {} glitched most: {} in {} with cause {}", v.tenant, which, v.stage,
                     v.cause);
}

std::string incidents_clause(const Diagnosis& d) {
  if (d.incidents.empty()) return "";
  std::string out =
      fmt::format("{} incident{} (sustained slowdown{}): ", d.incidents.size(),
                  d.incidents.size() == 1 ? "" : "s", d.incidents.size() == 1 ? "" : "s");
  return out + incident_sentence(d.incidents.front()) +
         (d.incidents.size() > 1 ? fmt::format(" and {} more", d.incidents.size() - 1) : "");
}

// The three busiest stages that ran, or "" when none did.
std::string busiest_stages(const Diagnosis& d) {
  std::vector<const StageReport*> stages;
  for (const auto& s : d.stages) {
    if (s.summary.count) stages.push_back(&s);
  }
  std::stable_sort(stages.begin(), stages.end(), [](const auto* a, const auto* b) {
    return a->summary.count > b->summary.count;
  });
  std::vector<std::string> names;
  for (size_t i = 0; i < stages.size() && i < 3; ++i) {
    const auto& s = *stages[i];
    names.push_back(fmt::format(
        "{} {} x{} (P99 {}{})", s.summary.tenant, s.summary.stage, s.summary.count,
        format_duration(s.summary.p99_ns),
        s.leading ? fmt::format(", {} {}", component_name(*s.leading), percent(s.leading_share))
                  : ""));
  }
  if (names.empty()) return "";
  return fmt::format("stages {}{}", fmt::join(names, ", "),
                     stages.size() > 3 ? fmt::format(" and {} more", stages.size() - 3) : "");
}

// What the host showed: the most throttled cgroup, the worst neighbour, the slowest TCP peer.
void add_host_clues(const Diagnosis& d, std::vector<std::string>& seen) {
  if (!d.throttled.empty() && d.throttled.front().throttled_seconds > 0) {
    const auto& t = d.throttled.front();
    seen.push_back(fmt::format(
        "cgroup {} throttled {:.1f} s ({} of its periods)", t.cgroup, t.throttled_seconds,
        t.periods ? percent(static_cast<double>(t.throttled_periods) / t.periods) : "-"));
  }
  if (!d.neighbours.empty()) {
    const auto& n = d.neighbours.front();
    seen.push_back(fmt::format("cgroup {} preempted by {} for {:.2f} s", n.cgroup, n.by_cgroup,
                               n.preempted_seconds));
  }
  if (!d.peers.empty()) {
    const auto& p = d.peers.front();
    if (p.mean_connection_seconds) {
      seen.push_back(
          fmt::format("slowest TCP peer {} -> {} ({} per connection)", p.local, p.remote,
                      format_duration(static_cast<uint64_t>(*p.mean_connection_seconds * 1e9))));
    } else if (p.mean_rtt_seconds) {
      seen.push_back(
          fmt::format("slowest TCP peer {} -> {} (RTT {})", p.local, p.remote,
                      format_duration(static_cast<uint64_t>(*p.mean_rtt_seconds * 1e9))));
    }
  }
}

// No glitch and no SDK request (recipe spans only, or nothing traced at all): what was seen
// instead, so the tables below are not contradicted by "0 requests from 0 tenants".
std::string seen_without_requests(const Diagnosis& d) {
  std::vector<std::string> seen;
  if (std::string stages = busiest_stages(d); !stages.empty()) seen.push_back(std::move(stages));
  add_host_clues(d, seen);
  // What was seen leads: "no glitches" above tables of 90% throttling would read as "all is well".
  std::string out =
      seen.empty() ? fmt::format(
                         "no glitches: 0 requests from 0 tenants in {:.0f} s (no SDK requests); "
                         "nothing traced (no recipe matched, no SDK program ran)",
                         d.duration_seconds)
                   : fmt::format("in {:.0f} s without SDK requests (no per-request verdicts): {}",
                                 d.duration_seconds, fmt::join(seen, "; "));
  if (!d.incidents.empty()) out += "; " + incidents_clause(d);
  return out;
}

}  // namespace

std::string incident_sentence(const Incident& i) {
  const uint64_t lasted = i.end_ns > i.start_ns ? i.end_ns - i.start_ns : 0;
  return fmt::format("tenant {}: {} for {}{}", i.tenant, i.describe(), format_duration(lasted),
                     i.active ? " (ongoing)" : "");
}

std::string diagnosis_headline(const Diagnosis& d) {
  if (d.verdicts.empty() && !d.incidents.empty()) return incidents_clause(d);
  if (d.verdicts.empty() && d.requests == 0) return seen_without_requests(d);
  if (d.verdicts.empty()) {
    std::vector<std::string> names;
    for (const auto& t : d.tenants) names.push_back(t.tenant);
    return fmt::format(
        "no glitches: {} request{} from {} tenant{}{} in {:.0f} s, every stage within its SLO "
        "(stage {}, request {}) and its recent P99",
        d.requests, d.requests == 1 ? "" : "s", d.tenants.size(), d.tenants.size() == 1 ? "" : "s",
        names.empty() ? "" : fmt::format(" ({})", fmt::join(names, ", ")), d.duration_seconds,
        format_duration(d.options.stage_slo_ns), format_duration(d.options.request_slo_ns));
  }
  const TenantVerdict& v = d.verdicts.front();
  std::string out = glitch_sentence(v);
  if (v.example && !v.example->verdict.evidence.empty())
    out += "; why: " + v.example->verdict.evidence;
  if (!d.incidents.empty()) out += "; " + incidents_clause(d);
  return out;
}

namespace {

// A section's table, or "" (the section says "none seen") when it has no rows.
std::string table_or_none(const Row& header, const std::vector<Row>& rows) {
  return rows.empty() ? "" : table(header, rows);
}

std::string summary_line(const Diagnosis& d) {
  return fmt::format(
      "tailcause diagnose: {:.0f} s, {} tenant{}, {} request{}, {} glitch{}, {} breaker trip{}\n",
      d.duration_seconds, d.tenants.size(), d.tenants.size() == 1 ? "" : "s", d.requests,
      d.requests == 1 ? "" : "s", d.glitches, d.glitches == 1 ? "" : "es", d.breaker_trips,
      d.breaker_trips == 1 ? "" : "s");
}

std::string tenants_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (const auto& t : d.tenants) {
    rows.push_back({t.tenant, fmt::format("{:.1f}", t.qps),
                    t.cache_lookups ? percent(t.cache_breakdown_rate) : "-",
                    t.embedding_p99_ns ? format_duration(*t.embedding_p99_ns) : "-",
                    std::to_string(t.requests), std::to_string(t.errors),
                    std::to_string(t.glitches)});
  }
  return section("Tenants", table_or_none({"TENANT", "QPS", "CACHE BREAKDOWN", "EMBEDDING P99",
                                           "REQUESTS", "ERRORS", "GLITCHES"},
                                          rows));
}

std::string stages_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (const auto& s : d.stages) {
    const auto& ss = s.summary;
    rows.push_back({ss.tenant, ss.stage, ss.count ? format_duration(ss.p50_ns) : "-",
                    ss.count ? format_duration(ss.p99_ns) : "-", std::to_string(ss.count),
                    std::to_string(ss.glitches),
                    s.leading
                        ? fmt::format("{} {}", component_name(*s.leading), percent(s.leading_share))
                        : "-"});
  }
  return section("Stages", table_or_none({"TENANT", "STAGE", "P50", "P99", "COUNT", "GLITCHES",
                                          "LEADING COMPONENT"},
                                         rows));
}

std::string why_section(const Diagnosis& d) {
  std::string why;
  for (const auto& v : d.verdicts) {
    why += "  " + glitch_sentence(v) + "\n";
    if (v.example && !v.example->verdict.evidence.empty())
      why += "    " + v.example->verdict.evidence + "\n";
  }
  return section("Why tenants glitched", why);
}

std::string incidents_section(const Diagnosis& d) {
  std::string incidents;
  for (const auto& i : d.incidents) incidents += "  " + incident_sentence(i) + "\n";
  return section("Incidents (sustained slowdowns over each stage's learned baseline)", incidents);
}

std::string top_glitches_section(const Diagnosis& d) {
  std::string glitches;
  for (size_t i = 0; i < d.top_glitches.size() && i < d.options.max_glitches; ++i) {
    const Glitch& g = d.top_glitches[i];
    // Detectors without a duration (cache breakdown, entropy spikes) show none.
    const bool timed = g.check.reason != GlitchReason::none;
    glitches += fmt::format("  {:<12} {:<12} {:>9}  {:<14} {}\n", g.tenant, g.stage,
                            timed ? format_duration(g.check.wall_ns) : "-", g.cause,
                            timed ? glitch_reason_name(g.check.reason) : "detector");
    if (!g.verdict.evidence.empty()) glitches += "      " + g.verdict.evidence + "\n";
  }
  if (!glitches.empty())
    glitches = fmt::format("  {:<12} {:<12} {:>9}  {:<14} {}\n", "TENANT", "STAGE", "WALL", "CAUSE",
                           "REASON") +
               glitches;
  return section("Top glitches", glitches);
}

std::string caches_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.caches.size(); ++i) {
    const auto& c = d.caches[i];
    if (!c.lookups && !c.breakdowns) continue;
    rows.push_back({c.tenant, c.cache, std::to_string(c.lookups), percent(c.ratio),
                    c.in_breakdown ? "yes" : "no", std::to_string(c.breakdowns),
                    c.stales ? format_duration(c.stale_age_p99_ns) : "-"});
  }
  return section("Vector caches (last window)",
                 table_or_none({"TENANT", "CACHE", "LOOKUPS", "MISS+STALE", "BREAKDOWN",
                                "BREAKDOWNS", "STALE AGE P99"},
                               rows));
}

std::string cache_actions_section(const Diagnosis& d) {
  std::vector<Row> rows;
  const auto rate = [](std::optional<double> r) { return r ? percent(*r) : std::string("-"); };
  for (const auto& c : d.cache_loop) {
    rows.push_back({c.tenant, c.cache,
                    c.warmups ? fmt::format("{} ({} entries)", c.warmups, c.warmed_entries) : "-",
                    std::to_string(c.rebalances),
                    c.quota_bytes ? format_bytes(*c.quota_bytes) : "-",
                    fmt::format("{} -> {}", rate(c.hit_rate_before()), rate(c.hit_rate_after()))});
  }
  return section("Vector cache actions (warm-ups, quota rebalances)",
                 table_or_none({"TENANT", "CACHE", "WARM-UPS", "REBALANCES", "QUOTA",
                                "HIT RATE BEFORE -> AFTER"},
                               rows));
}

std::string throttled_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.throttled.size() && i < d.options.max_rows; ++i) {
    const auto& t = d.throttled[i];
    rows.push_back({t.cgroup, seconds_text(t.throttled_seconds),
                    fmt::format("{} of {}", t.throttled_periods, t.periods),
                    t.quota_cpus ? fmt::format("{:.3g} CPU", *t.quota_cpus) : "-"});
  }
  return section("Throttled cgroups",
                 table_or_none({"CGROUP", "THROTTLED", "PERIODS THROTTLED", "QUOTA"}, rows));
}

std::string neighbours_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.neighbours.size() && i < d.options.max_rows; ++i) {
    const auto& n = d.neighbours[i];
    rows.push_back(
        {n.cgroup, n.by_cgroup, seconds_text(n.preempted_seconds), std::to_string(n.preemptions)});
  }
  return section("Noisy neighbours",
                 table_or_none({"CGROUP", "PREEMPTED BY", "WAITED", "PREEMPTIONS"}, rows));
}

std::string peers_section(const Diagnosis& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.peers.size() && i < d.options.max_rows; ++i) {
    const auto& p = d.peers[i];
    rows.push_back({p.local, p.remote, std::to_string(p.connections),
                    optional_seconds(p.mean_connection_seconds),
                    optional_seconds(p.mean_rtt_seconds)});
  }
  return section("Slowest TCP peers",
                 table_or_none({"LOCAL", "REMOTE", "CLOSED", "MEAN DURATION", "MEAN RTT"}, rows));
}

}  // namespace

std::string render_diagnosis_text(const Diagnosis& d) {
  return summary_line(d) + tenants_section(d) + stages_section(d) + why_section(d) +
         incidents_section(d) + top_glitches_section(d) + caches_section(d) +
         cache_actions_section(d) + throttled_section(d) + neighbours_section(d) + peers_section(d);
}

}  // namespace tailcause::core
