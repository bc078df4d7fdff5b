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

// The caches' rows by (tenant, cache), each made with all its fields on first use.
struct CacheRows {
  std::map<std::pair<std::string, std::string>, nlohmann::json> rows;
  nlohmann::json& operator()(const std::string& t, const std::string& c) {
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
  }
};

// Lookups by result and breakdowns over [from, to].
void add_cache_counts(CacheRows& row, const core::MetricHistory& h,
                      const std::optional<std::string>& tenant, int64_t from, int64_t to) {
  for (const auto* s : h.series(core::metric::kCacheLookups)) {
    if (tenant && s->label("tenant") != *tenant) continue;
    const std::string result = s->label("result");
    if (result != "hit" && result != "miss" && result != "stale") continue;
    row(s->label("tenant"), s->label("cache"))[result] =
        row(s->label("tenant"), s->label("cache"))[result].get<double>() +
        h.merged(s->id, from, to).value;
  }
  for (const auto* s : h.series(core::metric::kCacheBreakdowns)) {
    if (tenant && s->label("tenant") != *tenant) continue;
    row(s->label("tenant"), s->label("cache"))["breakdowns"] = h.merged(s->id, from, to).value;
  }
}

// The latest gauges: breakdown ratio (and state), competition, quota, stale-age quantiles.
void add_cache_gauges(CacheRows& row, const core::MetricHistory& h,
                      const std::optional<std::string>& tenant, double breakdown_ratio) {
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
}

// Throttling per cgroup over [from, to], the most throttled first.
std::vector<nlohmann::json> throttled_cgroups(const core::MetricHistory& h, int64_t from,
                                              int64_t to) {
  std::map<std::string, nlohmann::json> cg;
  auto sum_into = [&](const char* family, const char* field) {
    for (const auto* s : h.series(family)) {
      const double v = h.merged(s->id, from, to).value;
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
  return throttled;
}

// Noisy neighbours: preempted time per (victim, culprit) pair over [from, to], the costliest
// first.
std::vector<nlohmann::json> noisy_neighbours(const core::MetricHistory& h, int64_t from,
                                             int64_t to) {
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> pairs;
  for (const auto* s : h.series(core::metric::kCgroupPreemptedSeconds))
    pairs[{s->label("cgroup"), s->label("by_cgroup")}].first += h.merged(s->id, from, to).value;
  for (const auto* s : h.series(core::metric::kCgroupPreemptions))
    pairs[{s->label("cgroup"), s->label("by_cgroup")}].second += h.merged(s->id, from, to).value;
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
  return neighbours;
}

}  // namespace

nlohmann::json caches_json(const core::MetricHistory& h, const Params& p, int64_t now_ns,
                           double breakdown_ratio) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, 60);
  const auto tenant = p.name("tenant");
  CacheRows rows;
  add_cache_counts(rows, h, tenant, now_ns - since * kSecondNs, now_ns);
  add_cache_gauges(rows, h, tenant, breakdown_ratio);
  nlohmann::json out = nlohmann::json::array();
  for (auto& [k, r] : rows.rows) out.push_back(std::move(r));
  return {{"since_s", since}, {"breakdown_at", breakdown_ratio}, {"caches", std::move(out)}};
}

nlohmann::json contention_json(const core::MetricHistory& h, const Params& p, int64_t now_ns) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, 60);
  const int64_t from = now_ns - since * kSecondNs;
  nlohmann::json breakers = nlohmann::json::array();
  for (const auto& g : h.gauges(core::metric::kCircuitBreakerOpen)) {
    breakers.push_back({{"tenant", label(g.labels, "tenant")},
                        {"agent", label(g.labels, "agent")},
                        {"open", g.value > 0}});
  }
  return {{"since_s", since},
          {"throttling", throttled_cgroups(h, from, now_ns)},
          {"neighbours", noisy_neighbours(h, from, now_ns)},
          {"breakers", std::move(breakers)}};
}

}  // namespace tailcause::exporter::api
