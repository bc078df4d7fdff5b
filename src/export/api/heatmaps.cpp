// SPDX-License-Identifier: Apache-2.0
// /api/v1/heatmap/tcp (service pair x hour, P99) and /api/v1/heatmap/layers (layer x batch
// size, P99, from the SDK's layer probes).
#include <algorithm>
#include <charconv>
#include <map>

#include "core/record/schema.h"
#include "export/api/endpoints.h"

namespace tailcause::exporter::api {
namespace {

constexpr size_t kMaxPairs = 64;
constexpr size_t kMaxLayerAxis = 64;

// Numeric labels ("12") sort as numbers, others ("__other__") after them.
bool label_less(const std::string& a, const std::string& b) {
  long x = 0, y = 0;
  const bool na = std::from_chars(a.data(), a.data() + a.size(), x).ec == std::errc{};
  const bool nb = std::from_chars(b.data(), b.data() + b.size(), y).ec == std::errc{};
  if (na != nb) return na;
  return na ? x < y : a < b;
}

void add(std::vector<uint64_t>& into, const std::vector<uint64_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

uint64_t total(const std::vector<uint64_t>& b) {
  uint64_t n = 0;
  for (auto v : b) n += v;
  return n;
}

}  // namespace

nlohmann::json tcp_heatmap_json(const core::MetricHistory& h, const Params& p) {
  const std::string metric = p.choice("metric", {"rtt", "duration"}, "rtt");
  const int64_t hours = p.integer("hours", 1, 24, 24);
  const char* family =
      metric == "rtt" ? core::metric::kTcpRttSeconds : core::metric::kTcpConnectionDurationSeconds;
  const auto local = p.name("local"), remote = p.name("remote");
  // Pairs by observations over the hours asked, the busiest kMaxPairs kept.
  const auto& all_hours = h.hours();
  const size_t first = all_hours.size() > static_cast<size_t>(hours) ? all_hours.size() - hours : 0;
  std::map<uint32_t, uint64_t> volume;
  for (const auto* s : h.series(family)) {
    if ((local && s->label("local") != *local) || (remote && s->label("remote") != *remote))
      continue;
    for (size_t i = first; i < all_hours.size(); ++i)
      if (auto it = all_hours[i].deltas.find(s->id); it != all_hours[i].deltas.end())
        volume[s->id] += total(it->second.buckets);
  }
  std::vector<std::pair<uint64_t, uint32_t>> order;
  for (auto [id, n] : volume) order.push_back({n, id});
  std::sort(order.begin(), order.end(), [](auto a, auto b) { return a.first > b.first; });
  if (order.size() > kMaxPairs) order.resize(kMaxPairs);

  nlohmann::json pairs = nlohmann::json::array(), xs = nlohmann::json::array(),
                 cells = nlohmann::json::array();
  for (size_t i = first; i < all_hours.size(); ++i) xs.push_back(all_hours[i].start_unix_s);
  double max = 0;
  for (size_t pi = 0; pi < order.size(); ++pi) {
    const auto* s = h.series(order[pi].second);
    pairs.push_back({{"local", s->label("local")}, {"remote", s->label("remote")}});
    for (size_t i = first; i < all_hours.size(); ++i) {
      auto it = all_hours[i].deltas.find(s->id);
      if (it == all_hours[i].deltas.end() || total(it->second.buckets) == 0) continue;
      const double p99 = core::histogram_quantile(s->bounds, it->second.buckets, 0.99);
      max = std::max(max, p99);
      cells.push_back({pi, i - first, p99, total(it->second.buckets)});
    }
  }
  return {{"metric", metric},
          {"pairs", std::move(pairs)},
          {"hours", std::move(xs)},
          {"cells", std::move(cells)},
          {"max", max}};
}

nlohmann::json layer_heatmap_json(const core::MetricHistory& h, const Params& p, int64_t now_ns) {
  const int64_t since = p.integer("since", 1, kMaxSinceS, 900);
  const int64_t from = now_ns - since * kSecondNs;
  struct Cell {
    std::vector<double> bounds;
    std::vector<uint64_t> buckets;
  };
  std::map<std::pair<std::string, std::string>, Cell> cells;
  for (const auto* s : h.series(core::metric::kLayerDurationSeconds)) {
    const core::HistoryDelta d = h.merged(s->id, from, now_ns);
    if (d.count() == 0) continue;
    Cell& c = cells[{s->label("layer"), s->label("batch_size")}];
    if (c.bounds.empty()) c.bounds = s->bounds;
    if (c.bounds == s->bounds) add(c.buckets, d.buckets);
  }
  std::vector<std::string> layers, batches;
  for (const auto& [k, c] : cells) {
    layers.push_back(k.first);
    batches.push_back(k.second);
  }
  for (auto* v : {&layers, &batches}) {
    std::sort(v->begin(), v->end(), label_less);
    v->erase(std::unique(v->begin(), v->end()), v->end());
    if (v->size() > kMaxLayerAxis) v->resize(kMaxLayerAxis);
  }
  auto index_in = [](const std::vector<std::string>& v, const std::string& s) -> long {
    auto it = std::find(v.begin(), v.end(), s);
    return it == v.end() ? -1 : it - v.begin();
  };
  nlohmann::json out = nlohmann::json::array();
  double max = 0;
  for (const auto& [k, c] : cells) {
    const long li = index_in(layers, k.first), bi = index_in(batches, k.second);
    if (li < 0 || bi < 0) continue;
    const double p99 = core::histogram_quantile(c.bounds, c.buckets, 0.99);
    max = std::max(max, p99);
    out.push_back({li, bi, p99, total(c.buckets)});
  }
  return {{"layers", layers},
          {"batch_sizes", batches},
          {"cells", std::move(out)},
          {"max", max},
          {"since_s", since}};
}

}  // namespace tailcause::exporter::api
