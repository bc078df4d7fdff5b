// SPDX-License-Identifier: Apache-2.0
// /api/v1/stages and /api/v1/heatmap/stage: stage latency and its components over time.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "export/api/endpoints.h"

namespace tailcause::exporter::api {
namespace {

using Key = std::pair<std::string, std::string>;  // tenant, stage

bool wanted(const core::HistorySeries& s, const std::optional<std::string>& tenant,
            const std::optional<std::string>& stage) {
  return (!tenant || s.label("tenant") == *tenant) && (!stage || s.label("stage") == *stage);
}

struct Acc {
  std::vector<double> bounds;
  std::vector<uint64_t> buckets;
  std::array<double, core::kComponents> components{};
  double glitches = 0;
  void add(const core::HistoryDelta& d, const core::HistorySeries& s) {
    if (bounds.empty()) bounds = s.bounds;
    if (s.bounds != bounds) return;  // another bucket layout cannot be merged
    if (buckets.size() < d.buckets.size()) buckets.resize(d.buckets.size(), 0);
    for (size_t i = 0; i < d.buckets.size(); ++i) buckets[i] += d.buckets[i];
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (auto b : buckets) n += b;
    return n;
  }
};

nlohmann::json components_json(const std::array<double, core::kComponents>& c) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : c) out.push_back(v);
  return out;
}

// Which (tenant, stage) row each wanted series adds to, and as what: kind 0 duration,
// 1 a component (component_of says which), 2 glitches.
struct Roles {
  std::map<uint32_t, std::pair<Key, int>> of;  // series id -> key, kind
  std::map<uint32_t, size_t> component_of;
};

Roles stage_roles(const core::MetricHistory& h, const std::optional<std::string>& tenant,
                  const std::optional<std::string>& stage) {
  Roles roles;
  auto& role = roles.of;
  for (const auto* s : h.series(core::metric::kStageDurationSeconds))
    if (wanted(*s, tenant, stage)) role[s->id] = {{s->label("tenant"), s->label("stage")}, 0};
  for (const auto* s : h.series(core::metric::kStageTimeSeconds)) {
    const auto c = core::component_from_name(s->label("component"));
    if (!c || !wanted(*s, tenant, stage)) continue;
    role[s->id] = {{s->label("tenant"), s->label("stage")}, 1};
    roles.component_of[s->id] = core::index_of(*c);
  }
  for (const auto* s : h.series(core::metric::kGlitches))
    if (wanted(*s, tenant, stage)) role[s->id] = {{s->label("tenant"), s->label("stage")}, 2};
  return roles;
}

// A (tenant, stage) row: its totals and per-column accumulators.
struct Row {
  Acc total;
  std::map<int, Acc> points;
};

std::map<Key, Row> stage_rows(const core::MetricHistory& h, const Roles& roles,
                              const Columns& cols) {
  std::map<Key, Row> rows;
  for (const auto& t : h.ticks()) {
    const int col = cols.index(t.unix_ns);
    if (col < 0) continue;
    for (const auto& d : t.deltas) {
      auto r = roles.of.find(d.id);
      if (r == roles.of.end()) continue;
      // Glitches of whole requests (stage "request") have no duration series: skip their rows.
      if (r->second.second == 2 && !rows.count(r->second.first) &&
          r->second.first.second == "request")
        continue;
      Row& row = rows[r->second.first];
      Acc& point = row.points[col];
      switch (r->second.second) {
        case 0:
          row.total.add(d, *h.series(d.id));
          point.add(d, *h.series(d.id));
          break;
        case 1:
          row.total.components[roles.component_of.at(d.id)] += d.value;
          point.components[roles.component_of.at(d.id)] += d.value;
          break;
        default: row.total.glitches += d.value; point.glitches += d.value;
      }
    }
  }
  return rows;
}

nlohmann::json row_json(const Key& key, const Row& row, const Columns& cols) {
  size_t largest = 0;
  for (size_t i = 1; i < core::kComponents; ++i)
    if (row.total.components[i] > row.total.components[largest]) largest = i;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [col, a] : row.points) {
    points.push_back({{"t", cols.ends[col] / kSecondNs},
                      {"count", a.count()},
                      {"p50_s", core::histogram_quantile(a.bounds, a.buckets, 0.5)},
                      {"p99_s", core::histogram_quantile(a.bounds, a.buckets, 0.99)},
                      {"glitches", a.glitches},
                      {"components_s", components_json(a.components)}});
  }
  return {{"tenant", key.first},
          {"stage", key.second},
          {"count", row.total.count()},
          {"p50_s", core::histogram_quantile(row.total.bounds, row.total.buckets, 0.5)},
          {"p99_s", core::histogram_quantile(row.total.bounds, row.total.buckets, 0.99)},
          {"glitches", row.total.glitches},
          {"largest_component",
           row.total.components[largest] > 0 ? core::kComponentNames[largest] : ""},
          {"components_s", components_json(row.total.components)},
          {"points", std::move(points)}};
}

}  // namespace

int Columns::index(int64_t tick_ns) const {
  if (tick_ns <= from_ns || tick_ns > to_ns || step_ns <= 0) return -1;
  const int64_t i = (tick_ns - from_ns - 1) / step_ns;
  return i < static_cast<int64_t>(ends.size()) ? static_cast<int>(i) : -1;
}

SinceStep since_and_step(const Params& p, int64_t default_since_s, int64_t default_step_s) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, default_since_s);
  const int64_t step = p.integer("step", 1, 3600, default_step_s);
  if (since / step > kMaxPoints) {
    throw BadRequest(
        fmt::format("since={} step={}: more than {} points; raise step", since, step, kMaxPoints));
  }
  return {since, step};
}

Columns columns(const Params& p, int64_t now_ns, int64_t tick_ns, int64_t default_since_s,
                int64_t default_step_s) {
  const int64_t min_step = std::max<int64_t>(1, tick_ns / kSecondNs);
  const auto [since, step] = since_and_step(p, default_since_s, std::max(default_step_s, min_step));
  Columns c;
  c.step_ns = std::max(step, min_step) * kSecondNs;
  const int64_t n = std::max<int64_t>(1, (since * kSecondNs + c.step_ns - 1) / c.step_ns);
  c.to_ns = now_ns;
  c.from_ns = now_ns - n * c.step_ns;
  for (int64_t i = 1; i <= n; ++i) c.ends.push_back(c.from_ns + i * c.step_ns);
  return c;
}

namespace {

// Per family of agent series: how many it holds, its limit, and the observations it folded into
// its __other__ series over the columns' span (none folded: not listed).
nlohmann::json series_budget_json(const core::MetricHistory& h, const Columns& cols) {
  auto gauge = [&h](const char* family, const std::string& name) -> std::optional<double> {
    for (const auto& s : h.gauges(family)) {
      for (const auto& [k, v] : s.labels)
        if (k == "family" && v == name) return s.value;
    }
    return std::nullopt;
  };
  nlohmann::json out = nlohmann::json::array();
  for (const core::HistorySeries* s : h.series(core::metric::kSeriesFolded)) {
    const double folded = h.merged(s->id, cols.from_ns, cols.to_ns).value;
    if (folded <= 0) continue;
    const std::string& family = s->label("family");
    out.push_back({{"family", family},
                   {"series", gauge(core::metric::kSeries, family).value_or(0)},
                   {"limit", gauge(core::metric::kSeriesLimit, family).value_or(0)},
                   {"folded", folded}});
  }
  return out;
}

}  // namespace

nlohmann::json stages_json(const core::MetricHistory& h, const Params& p, int64_t now_ns) {
  const auto tenant = p.name("tenant"), stage = p.name("stage");
  const Columns cols = columns(p, now_ns, h.settings().step_ns, 300, 10);
  nlohmann::json series = nlohmann::json::array();
  for (const auto& [key, row] : stage_rows(h, stage_roles(h, tenant, stage), cols)) {
    series.push_back(row_json(key, row, cols));
  }
  nlohmann::json names = nlohmann::json::array();
  for (auto n : core::kComponentNames) names.push_back(n);
  return {{"now", now_ns / kSecondNs},          {"from", cols.from_ns / kSecondNs},
          {"step_s", cols.step_ns / kSecondNs}, {"components", std::move(names)},
          {"series", std::move(series)},        {"series_budget", series_budget_json(h, cols)}};
}

nlohmann::json stage_heatmap_json(const core::StageHeatmap& h, const Params& p, int64_t now_ns) {
  const auto stage = p.name("stage");
  if (!stage) throw BadRequest("stage is required (e.g. stage=generation)");
  const auto tenant = p.name("tenant");
  const auto [since, step] = since_and_step(p, 900, 10);
  // Whole seconds, columns on multiples of step (they stay put from one refresh to the next),
  // the last one holding the current second, which is still filling.
  const int64_t columns = (since + step - 1) / step;
  const int64_t to_s = (now_ns / kSecondNs / step + 1) * step, from_s = to_s - columns * step;
  nlohmann::json x = nlohmann::json::array(), out_cells = nlohmann::json::array();
  for (int64_t i = 1; i <= columns; ++i) x.push_back(from_s + i * step);
  uint64_t max = 0;
  for (const auto& c : h.cells(*stage, tenant, from_s, step, static_cast<size_t>(columns))) {
    out_cells.push_back({c.column, c.bucket, c.count});
    max = std::max(max, c.count);
  }
  return {{"stage", *stage},   {"tenant", tenant ? *tenant : ""},   {"step_s", step},
          {"x", std::move(x)}, {"bounds", core::duration_bounds()}, {"cells", std::move(out_cells)},
          {"max", max}};
}

}  // namespace tailcause::exporter::api
