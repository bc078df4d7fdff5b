// SPDX-License-Identifier: Apache-2.0
// The diagnosis as JSON (diagnosis.h): `diagnose --json`, `demo --json` and the glitch listings.
// One function per array of the document.
#include <map>

#include "core/detect/verdict.h"
#include "core/report/diagnosis.h"

namespace tailcause::core {
namespace {

nlohmann::json json_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

double ns_to_s(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

nlohmann::json verdict_json(const TenantVerdict& v) {
  return {{"stage", v.stage},
          {"cause", v.cause},
          {"count", v.count},
          {"glitches", v.tenant_glitches},
          {"example", v.example ? glitch_json(*v.example) : nlohmann::json(nullptr)}};
}

// Each tenant with its verdict (null when it did not glitch).
nlohmann::json tenants_json(const Diagnosis& d) {
  std::map<std::string, const TenantVerdict*> verdicts;
  for (const auto& v : d.verdicts) verdicts[v.tenant] = &v;
  nlohmann::json tenants = nlohmann::json::array();
  for (const auto& t : d.tenants) {
    nlohmann::json verdict = nullptr;
    if (auto it = verdicts.find(t.tenant); it != verdicts.end())
      verdict = verdict_json(*it->second);
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
  return tenants;
}

nlohmann::json stages_json(const Diagnosis& d) {
  nlohmann::json stages = nlohmann::json::array();
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
  return stages;
}

nlohmann::json causes_json(const Diagnosis& d) {
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& c : d.causes)
    causes.push_back(
        {{"tenant", c.tenant}, {"stage", c.stage}, {"cause", c.cause}, {"count", c.count}});
  return causes;
}

// The vector caches' warm-ups and quota rebalances, with hit rates before and after.
nlohmann::json cache_actions_json(const Diagnosis& d) {
  nlohmann::json loop = nlohmann::json::array();
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
  return loop;
}

nlohmann::json caches_json(const Diagnosis& d) {
  nlohmann::json caches = nlohmann::json::array();
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
  return caches;
}

nlohmann::json throttled_json(const Diagnosis& d) {
  nlohmann::json throttled = nlohmann::json::array();
  for (const auto& t : d.throttled) {
    throttled.push_back({{"cgroup", t.cgroup},
                         {"throttled_seconds", t.throttled_seconds},
                         {"throttled_periods", t.throttled_periods},
                         {"periods", t.periods},
                         {"quota_cpus", json_or_null(t.quota_cpus)}});
  }
  return throttled;
}

nlohmann::json neighbours_json(const Diagnosis& d) {
  nlohmann::json neighbours = nlohmann::json::array();
  for (const auto& n : d.neighbours) {
    neighbours.push_back({{"cgroup", n.cgroup},
                          {"by_cgroup", n.by_cgroup},
                          {"preempted_seconds", n.preempted_seconds},
                          {"preemptions", n.preemptions}});
  }
  return neighbours;
}

nlohmann::json peers_json(const Diagnosis& d) {
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& p : d.peers) {
    peers.push_back({{"local", p.local},
                     {"remote", p.remote},
                     {"connections", p.connections},
                     {"mean_connection_seconds", json_or_null(p.mean_connection_seconds)},
                     {"rtt_samples", p.rtt_samples},
                     {"mean_rtt_seconds", json_or_null(p.mean_rtt_seconds)}});
  }
  return peers;
}

}  // namespace

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
  out["tenants"] = tenants_json(d);
  out["stages"] = stages_json(d);
  out["glitch_causes"] = causes_json(d);
  nlohmann::json& top = out["top_glitches"] = nlohmann::json::array();
  for (const auto& g : d.top_glitches) top.push_back(glitch_json(g));
  out["cache_actions"] = cache_actions_json(d);
  out["caches"] = caches_json(d);
  nlohmann::json& incidents = out["incidents"] = nlohmann::json::array();
  for (const auto& i : d.incidents) incidents.push_back(incident_json(i));
  out["throttled_cgroups"] = throttled_json(d);
  out["noisy_neighbours"] = neighbours_json(d);
  out["slowest_tcp_peers"] = peers_json(d);
  return out;
}

}  // namespace tailcause::core
