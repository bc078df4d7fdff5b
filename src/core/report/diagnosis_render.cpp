// SPDX-License-Identifier: Apache-2.0
// The diagnosis as terminal tables, as JSON, and as one sentence (diagnosis.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

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

nlohmann::json json_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

double ns_to_s(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

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

// No glitch and no SDK request (recipe spans only, or nothing traced at all): what was seen
// instead, so the tables below are not contradicted by "0 requests from 0 tenants".
std::string seen_without_requests(const Diagnosis& d) {
  std::vector<std::string> seen;
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
  if (!names.empty()) {
    seen.push_back(
        fmt::format("stages {}{}", fmt::join(names, ", "),
                    stages.size() > 3 ? fmt::format(" and {} more", stages.size() - 3) : ""));
  }
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

std::string render_diagnosis_text(const Diagnosis& d) {
  std::string out = fmt::format(
      "tailcause diagnose: {:.0f} s, {} tenant{}, {} request{}, {} glitch{}, {} breaker trip{}\n",
      d.duration_seconds, d.tenants.size(), d.tenants.size() == 1 ? "" : "s", d.requests,
      d.requests == 1 ? "" : "s", d.glitches, d.glitches == 1 ? "" : "es", d.breaker_trips,
      d.breaker_trips == 1 ? "" : "s");

  std::vector<Row> rows;
  for (const auto& t : d.tenants) {
    rows.push_back({t.tenant, fmt::format("{:.1f}", t.qps),
                    t.cache_lookups ? percent(t.cache_breakdown_rate) : "-",
                    t.embedding_p99_ns ? format_duration(*t.embedding_p99_ns) : "-",
                    std::to_string(t.requests), std::to_string(t.errors),
                    std::to_string(t.glitches)});
  }
  out +=
      section("Tenants", rows.empty() ? ""
                                      : table({"TENANT", "QPS", "CACHE BREAKDOWN", "EMBEDDING P99",
                                               "REQUESTS", "ERRORS", "GLITCHES"},
                                              rows));

  rows.clear();
  for (const auto& s : d.stages) {
    const auto& ss = s.summary;
    rows.push_back({ss.tenant, ss.stage, ss.count ? format_duration(ss.p50_ns) : "-",
                    ss.count ? format_duration(ss.p99_ns) : "-", std::to_string(ss.count),
                    std::to_string(ss.glitches),
                    s.leading
                        ? fmt::format("{} {}", component_name(*s.leading), percent(s.leading_share))
                        : "-"});
  }
  out += section("Stages", rows.empty() ? ""
                                        : table({"TENANT", "STAGE", "P50", "P99", "COUNT",
                                                 "GLITCHES", "LEADING COMPONENT"},
                                                rows));

  std::string why;
  for (const auto& v : d.verdicts) {
    why += "  " + glitch_sentence(v) + "\n";
    if (v.example && !v.example->verdict.evidence.empty())
      why += "    " + v.example->verdict.evidence + "\n";
  }
  out += section("Why tenants glitched", why);

  std::string incidents;
  for (const auto& i : d.incidents) incidents += "  " + incident_sentence(i) + "\n";
  out += section("Incidents (sustained slowdowns over each stage's learned baseline)", incidents);

  rows.clear();
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
  out += section("Top glitches", glitches);

  rows.clear();
  for (size_t i = 0; i < d.caches.size(); ++i) {
    const auto& c = d.caches[i];
    if (!c.lookups && !c.breakdowns) continue;
    rows.push_back({c.tenant, c.cache, std::to_string(c.lookups), percent(c.ratio),
                    c.in_breakdown ? "yes" : "no", std::to_string(c.breakdowns),
                    c.stales ? format_duration(c.stale_age_p99_ns) : "-"});
  }
  out += section("Vector caches (last window)",
                 rows.empty() ? ""
                              : table({"TENANT", "CACHE", "LOOKUPS", "MISS+STALE", "BREAKDOWN",
                                       "BREAKDOWNS", "STALE AGE P99"},
                                      rows));

  rows.clear();
  const auto rate = [](std::optional<double> r) { return r ? percent(*r) : std::string("-"); };
  for (const auto& c : d.cache_loop) {
    rows.push_back({c.tenant, c.cache,
                    c.warmups ? fmt::format("{} ({} entries)", c.warmups, c.warmed_entries) : "-",
                    std::to_string(c.rebalances),
                    c.quota_bytes ? format_bytes(*c.quota_bytes) : "-",
                    fmt::format("{} -> {}", rate(c.hit_rate_before()), rate(c.hit_rate_after()))});
  }
  out += section("Vector cache actions (warm-ups, quota rebalances)",
                 rows.empty() ? ""
                              : table({"TENANT", "CACHE", "WARM-UPS", "REBALANCES", "QUOTA",
                                       "HIT RATE BEFORE -> AFTER"},
                                      rows));

  rows.clear();
  for (size_t i = 0; i < d.throttled.size() && i < d.options.max_rows; ++i) {
    const auto& t = d.throttled[i];
    rows.push_back({t.cgroup, seconds_text(t.throttled_seconds),
                    fmt::format("{} of {}", t.throttled_periods, t.periods),
                    t.quota_cpus ? fmt::format("{:.3g} CPU", *t.quota_cpus) : "-"});
  }
  out += section(
      "Throttled cgroups",
      rows.empty() ? "" : table({"CGROUP", "THROTTLED", "PERIODS THROTTLED", "QUOTA"}, rows));

  rows.clear();
  for (size_t i = 0; i < d.neighbours.size() && i < d.options.max_rows; ++i) {
    const auto& n = d.neighbours[i];
    rows.push_back(
        {n.cgroup, n.by_cgroup, seconds_text(n.preempted_seconds), std::to_string(n.preemptions)});
  }
  out +=
      section("Noisy neighbours",
              rows.empty() ? "" : table({"CGROUP", "PREEMPTED BY", "WAITED", "PREEMPTIONS"}, rows));

  rows.clear();
  for (size_t i = 0; i < d.peers.size() && i < d.options.max_rows; ++i) {
    const auto& p = d.peers[i];
    rows.push_back({p.local, p.remote, std::to_string(p.connections),
                    optional_seconds(p.mean_connection_seconds),
                    optional_seconds(p.mean_rtt_seconds)});
  }
  out += section(
      "Slowest TCP peers",
      rows.empty() ? "" : table({"LOCAL", "REMOTE", "CLOSED", "MEAN DURATION", "MEAN RTT"}, rows));
  return out;
}

nlohmann::json glitch_json(const Glitch& g) {
  nlohmann::json culprits = nlohmann::json::array();
  for (const auto& c : g.verdict.culprits) {
    culprits.push_back({{"component", component_name(c.component)},
                        {"seconds", ns_to_s(c.ns)},
                        {"share", c.share_of_wall},
                        {"excess_seconds", c.excess_ns * 1e-9}});
  }
  return {{"tenant", g.tenant},
          {"agent", g.agent},
          {"stage", g.stage},
          {"cause", g.cause},
          {"wall_seconds", ns_to_s(g.check.wall_ns)},
          {"reason", glitch_reason_name(g.check.reason)},
          {"slo_seconds", ns_to_s(g.check.slo_ns)},
          {"p99_seconds",
           g.check.p99_ns ? nlohmann::json(ns_to_s(*g.check.p99_ns)) : nlohmann::json(nullptr)},
          {"evidence", g.verdict.evidence},
          {"culprits", std::move(culprits)},
          {"trace_id", g.trace_id},
          {"pid", g.pid},
          {"request_id", g.request_id}};
}

nlohmann::json incident_json(const Incident& i) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : i.stages) {
    stages.push_back({{"stage", st.stage},
                      {"baseline_seconds", ns_to_s(st.baseline_ns)},
                      {"slowed", st.slowed},
                      {"peak_ratio", st.peak_ratio}});
  }
  nlohmann::json excess = nlohmann::json::object();
  for (size_t c = 0; c < kComponents; ++c) excess[kComponentNames[c]] = i.excess_ns[c] * 1e-9;
  return {{"id", i.id},
          {"tenant", i.tenant},
          {"active", i.active},
          {"start_ns", i.start_ns},
          {"end_ns", i.end_ns},
          {"duration_seconds", ns_to_s(i.end_ns > i.start_ns ? i.end_ns - i.start_ns : 0)},
          {"stage", i.leading().stage},
          {"stages", std::move(stages)},
          {"cause", i.cause},
          {"cause_share", i.cause_share},
          {"slowed", i.slowed},
          {"peak_ratio", i.peak_ratio},
          {"median_ratio", i.median_ratio},
          {"excess_seconds", std::move(excess)},
          {"summary", incident_sentence(i)}};
}

nlohmann::json diagnosis_json(const Diagnosis& d) {
  nlohmann::json out = {{"duration_seconds", d.duration_seconds},
                        {"requests", d.requests},
                        {"glitches", d.glitches},
                        {"breaker_trips", d.breaker_trips},
                        {"headline", diagnosis_headline(d)}};
  std::map<std::string, const TenantVerdict*> verdicts;
  for (const auto& v : d.verdicts) verdicts[v.tenant] = &v;
  auto& tenants = out["tenants"] = nlohmann::json::array();
  for (const auto& t : d.tenants) {
    nlohmann::json verdict = nullptr;
    if (auto it = verdicts.find(t.tenant); it != verdicts.end()) {
      const TenantVerdict& v = *it->second;
      verdict = {{"stage", v.stage},
                 {"cause", v.cause},
                 {"count", v.count},
                 {"glitches", v.tenant_glitches},
                 {"example", v.example ? glitch_json(*v.example) : nlohmann::json(nullptr)}};
    }
    tenants.push_back(
        {{"tenant", t.tenant},
         {"qps", t.qps},
         {"requests", t.requests},
         {"errors", t.errors},
         {"glitches", t.glitches},
         {"cache_lookups", t.cache_lookups},
         {"cache_breakdown_rate", t.cache_breakdown_rate},
         {"embedding_p99_seconds", t.embedding_p99_ns ? nlohmann::json(ns_to_s(*t.embedding_p99_ns))
                                                      : nlohmann::json(nullptr)},
         {"verdict", std::move(verdict)}});
  }
  auto& stages = out["stages"] = nlohmann::json::array();
  for (const auto& s : d.stages) {
    nlohmann::json components = nlohmann::json::object();
    for (size_t c = 0; c < kComponents; ++c)
      components[kComponentNames[c]] = ns_to_s(s.summary.component_ns[c]);
    stages.push_back({{"tenant", s.summary.tenant},
                      {"stage", s.summary.stage},
                      {"count", s.summary.count},
                      {"p50_seconds", ns_to_s(s.summary.p50_ns)},
                      {"p99_seconds", ns_to_s(s.summary.p99_ns)},
                      {"glitches", s.summary.glitches},
                      {"leading_component", s.leading ? nlohmann::json(component_name(*s.leading))
                                                      : nlohmann::json(nullptr)},
                      {"leading_share", s.leading_share},
                      {"component_seconds", std::move(components)}});
  }
  auto& causes = out["glitch_causes"] = nlohmann::json::array();
  for (const auto& c : d.causes)
    causes.push_back(
        {{"tenant", c.tenant}, {"stage", c.stage}, {"cause", c.cause}, {"count", c.count}});
  auto& top = out["top_glitches"] = nlohmann::json::array();
  for (const auto& g : d.top_glitches) top.push_back(glitch_json(g));
  auto& loop = out["cache_actions"] = nlohmann::json::array();
  const auto rate = [](std::optional<double> r) { return r ? nlohmann::json(*r) : nullptr; };
  for (const auto& c : d.cache_loop) {
    loop.push_back({{"tenant", c.tenant},
                    {"cache", c.cache},
                    {"warmups", c.warmups},
                    {"warmed_entries", c.warmed_entries},
                    {"rebalances", c.rebalances},
                    {"quota_bytes", c.quota_bytes ? nlohmann::json(*c.quota_bytes) : nullptr},
                    {"lookups_before", c.lookups_before},
                    {"hit_rate_before", rate(c.hit_rate_before())},
                    {"lookups_after", c.lookups_after},
                    {"hit_rate_after", rate(c.hit_rate_after())}});
  }
  auto& caches = out["caches"] = nlohmann::json::array();
  for (const auto& c : d.caches) {
    caches.push_back({{"tenant", c.tenant},
                      {"cache", c.cache},
                      {"lookups", c.lookups},
                      {"hits", c.hits},
                      {"misses", c.misses},
                      {"stales", c.stales},
                      {"ratio", c.ratio},
                      {"in_breakdown", c.in_breakdown},
                      {"breakdowns", c.breakdowns},
                      {"stale_age_p95_seconds", ns_to_s(c.stale_age_p95_ns)},
                      {"stale_age_p99_seconds", ns_to_s(c.stale_age_p99_ns)}});
  }
  auto& incidents = out["incidents"] = nlohmann::json::array();
  for (const auto& i : d.incidents) incidents.push_back(incident_json(i));
  auto& throttled = out["throttled_cgroups"] = nlohmann::json::array();
  for (const auto& t : d.throttled) {
    throttled.push_back({{"cgroup", t.cgroup},
                         {"throttled_seconds", t.throttled_seconds},
                         {"throttled_periods", t.throttled_periods},
                         {"periods", t.periods},
                         {"quota_cpus", json_or_null(t.quota_cpus)}});
  }
  auto& neighbours = out["noisy_neighbours"] = nlohmann::json::array();
  for (const auto& n : d.neighbours) {
    neighbours.push_back({{"cgroup", n.cgroup},
                          {"by_cgroup", n.by_cgroup},
                          {"preempted_seconds", n.preempted_seconds},
                          {"preemptions", n.preemptions}});
  }
  auto& peers = out["slowest_tcp_peers"] = nlohmann::json::array();
  for (const auto& p : d.peers) {
    peers.push_back({{"local", p.local},
                     {"remote", p.remote},
                     {"connections", p.connections},
                     {"mean_connection_seconds", json_or_null(p.mean_connection_seconds)},
                     {"rtt_samples", p.rtt_samples},
                     {"mean_rtt_seconds", json_or_null(p.mean_rtt_seconds)}});
  }
  return out;
}

}  // namespace tailcause::core
