// SPDX-License-Identifier: Apache-2.0
// /api/v1/caches (per tenant cache results, breakdown state, stale-age quantiles) and
// /api/v1/contention (throttled cgroups, noisy neighbours, circuit breakers).
#include <algorithm>
#include <map>

#include "core/record/schema.h"
#include "export/api/endpoints.h"

namespace tailcause::exporter::api {
namespace {

constexpr size_t kMaxRows = 20;

std::string label(const core::Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels)
    if (k == name) return v;
  return "";
}

}  // namespace

nlohmann::json caches_json(const core::MetricHistory& h, const Params& p, int64_t now_ns,
                           double breakdown_ratio) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, 60);
  const auto tenant = p.name("tenant");
  const int64_t from = now_ns - since * kSecondNs;
  using Key = std::pair<std::string, std::string>;
  std::map<Key, nlohmann::json> rows;
  auto row = [&](const std::string& t, const std::string& c) -> nlohmann::json& {
    auto [it, fresh] = rows.try_emplace({t, c});
    if (fresh) {
      it->second = {{"tenant", t},
                    {"cache", c},
                    {"hit", 0.0},
                    {"miss", 0.0},
                    {"stale", 0.0},
                    {"breakdown_ratio", nullptr},
                    {"stale_age_p95_s", nullptr},
                    {"stale_age_p99_s", nullptr},
                    {"breakdowns", 0.0},
                    {"competition", nullptr},
                    {"quota_bytes", nullptr},
                    {"state", "ok"}};
    }
    return it->second;
  };
  for (const auto* s : h.series(core::metric::kCacheLookups)) {
    if (tenant && s->label("tenant") != *tenant) continue;
    const std::string result = s->label("result");
    if (result != "hit" && result != "miss" && result != "stale") continue;
    row(s->label("tenant"), s->label("cache"))[result] =
        row(s->label("tenant"), s->label("cache"))[result].get<double>() +
        h.merged(s->id, from, now_ns).value;
  }
  for (const auto* s : h.series(core::metric::kCacheBreakdowns)) {
    if (tenant && s->label("tenant") != *tenant) continue;
    row(s->label("tenant"), s->label("cache"))["breakdowns"] = h.merged(s->id, from, now_ns).value;
  }
  for (const auto& g : h.gauges(core::metric::kCacheBreakdownRatio)) {
    const std::string t = label(g.labels, "tenant");
    if (tenant && t != *tenant) continue;
    auto& r = row(t, label(g.labels, "cache"));
    r["breakdown_ratio"] = g.value;
    if (g.value >= breakdown_ratio) r["state"] = "breakdown";
  }
  for (const auto* family : {core::metric::kCacheCompetition, core::metric::kCacheQuotaBytes}) {
    for (const auto& g : h.gauges(family)) {
      const std::string t = label(g.labels, "tenant");
      if (tenant && t != *tenant) continue;
      row(t,
          label(
              g.labels,
              "cache"))[family == core::metric::kCacheCompetition ? "competition" : "quota_bytes"] =
          g.value;
    }
  }
  for (const auto& g : h.gauges(core::metric::kCacheStaleAgeSeconds)) {
    const std::string t = label(g.labels, "tenant");
    if (tenant && t != *tenant) continue;
    const std::string q = label(g.labels, "quantile");
    if (q == "0.95" || q == "0.99")
      row(t, label(g.labels, "cache"))[q == "0.95" ? "stale_age_p95_s" : "stale_age_p99_s"] =
          g.value;
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [k, r] : rows) out.push_back(std::move(r));
  return {{"since_s", since}, {"breakdown_at", breakdown_ratio}, {"caches", std::move(out)}};
}

nlohmann::json contention_json(const core::MetricHistory& h, const Params& p, int64_t now_ns) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, 60);
  const int64_t from = now_ns - since * kSecondNs;
  // Throttling per cgroup over the range, the most throttled first.
  std::map<std::string, nlohmann::json> cg;
  auto sum_into = [&](const char* family, const char* field) {
    for (const auto* s : h.series(family)) {
      const double v = h.merged(s->id, from, now_ns).value;
      auto& r = cg[s->label("cgroup")];
      if (r.is_null())
        r = {{"cgroup", s->label("cgroup")},
             {"throttled_s", 0.0},
             {"throttled_periods", 0.0},
             {"periods", 0.0},
             {"quota_cpus", nullptr}};
      r[field] = r[field].get<double>() + v;
    }
  };
  sum_into(core::metric::kCpuThrottledSeconds, "throttled_s");
  sum_into(core::metric::kCpuThrottledPeriods, "throttled_periods");
  sum_into(core::metric::kCpuPeriods, "periods");
  std::map<std::string, double> period;
  for (const auto& g : h.gauges(core::metric::kCpuPeriodSeconds))
    period[label(g.labels, "cgroup")] = g.value;
  for (const auto& g : h.gauges(core::metric::kCpuQuotaSeconds)) {
    const std::string c = label(g.labels, "cgroup");
    auto it = cg.find(c);
    if (it != cg.end() && period[c] > 0) it->second["quota_cpus"] = g.value / period[c];
  }
  std::vector<nlohmann::json> throttled;
  for (auto& [c, r] : cg)
    if (r["throttled_periods"].get<double>() > 0) throttled.push_back(std::move(r));
  std::sort(throttled.begin(), throttled.end(), [](const auto& a, const auto& b) {
    return a["throttled_s"].template get<double>() > b["throttled_s"].template get<double>();
  });
  if (throttled.size() > kMaxRows) throttled.resize(kMaxRows);

  // Noisy neighbours: preempted time per (victim, culprit) pair, the costliest first.
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> pairs;
  for (const auto* s : h.series(core::metric::kCgroupPreemptedSeconds))
    pairs[{s->label("cgroup"), s->label("by_cgroup")}].first += h.merged(s->id, from, now_ns).value;
  for (const auto* s : h.series(core::metric::kCgroupPreemptions))
    pairs[{s->label("cgroup"), s->label("by_cgroup")}].second +=
        h.merged(s->id, from, now_ns).value;
  std::vector<nlohmann::json> neighbours;
  for (const auto& [k, v] : pairs) {
    if (v.first <= 0 || k.first == k.second) continue;
    neighbours.push_back({{"cgroup", k.first},
                          {"by_cgroup", k.second},
                          {"preempted_s", v.first},
                          {"preemptions", v.second}});
  }
  std::sort(neighbours.begin(), neighbours.end(), [](const auto& a, const auto& b) {
    return a["preempted_s"].template get<double>() > b["preempted_s"].template get<double>();
  });
  if (neighbours.size() > kMaxRows) neighbours.resize(kMaxRows);

  nlohmann::json breakers = nlohmann::json::array();
  for (const auto& g : h.gauges(core::metric::kCircuitBreakerOpen)) {
    breakers.push_back({{"tenant", label(g.labels, "tenant")},
                        {"agent", label(g.labels, "agent")},
                        {"open", g.value > 0}});
  }
  return {{"since_s", since},
          {"throttling", throttled},
          {"neighbours", neighbours},
          {"breakers", std::move(breakers)}};
}

}  // namespace tailcause::exporter::api
