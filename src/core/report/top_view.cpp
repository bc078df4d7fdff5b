// SPDX-License-Identifier: Apache-2.0
#include "core/report/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

namespace tailcause::core {
namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kReverse = "\x1b[7m";
constexpr const char* kReset = "\x1b[0m";

std::string duration(double s) {
  if (s <= 0) return "-";
  if (s >= 1) return fmt::format("{:.2f}s", s);
  if (s >= 0.01) return fmt::format("{:.0f}ms", s * 1e3);
  return fmt::format("{:.2f}ms", s * 1e3);
}

// Cuts or pads to exactly n characters (labels are ASCII: the API's names are).
std::string fit(const std::string& s, size_t n, bool right = false) {
  if (s.size() >= n) return n == 0 ? "" : (s.size() == n ? s : s.substr(0, n - 1) + "~");
  const std::string pad(n - s.size(), ' ');
  return right ? pad + s : s + pad;
}

struct Column {
  const char* title;
  size_t width;
  bool right;
  int min_screen;  // shown from this terminal width on
};
// tenant, stage, count, p50, p99, largest, glitches, cache, breaker
constexpr Column kColumns[] = {
    {"TENANT", 12, false, 0}, {"STAGE", 11, false, 0}, {"COUNT", 7, true, 72},
    {"P50", 8, true, 56},     {"P99", 8, true, 0},     {"LARGEST", 14, false, 88},
    {"GLITCH", 6, true, 40},  {"CACHE", 7, true, 64},  {"BREAKER", 7, false, 80}};

}  // namespace

std::optional<TopSort> top_sort_for_key(char key) {
  switch (key) {
    case 'p': return TopSort::p99;
    case 'm': return TopSort::p50;
    case 'g': return TopSort::glitches;
    case 'n': return TopSort::count;
    case 't': return TopSort::tenant;
    default: return std::nullopt;
  }
}

const char* top_sort_name(TopSort s) {
  switch (s) {
    case TopSort::p99: return "P99";
    case TopSort::p50: return "P50";
    case TopSort::glitches: return "glitches";
    case TopSort::count: return "count";
    case TopSort::tenant: return "tenant";
  }
  return "";
}

std::vector<TopRow> top_rows(const nlohmann::json& stages, const nlohmann::json& caches,
                             const nlohmann::json& contention) {
  std::map<std::string, std::pair<double, bool>> cache;  // tenant -> worst ratio, breakdown
  for (const auto& c : caches.at("caches")) {
    if (c.at("breakdown_ratio").is_null()) continue;
    auto& [ratio, broken] = cache[c.at("tenant").get<std::string>()];
    ratio = std::max(ratio, c.at("breakdown_ratio").get<double>());
    broken = broken || c.at("state").get<std::string>() != "ok";
  }
  std::map<std::string, bool> breaker;
  for (const auto& b : contention.at("breakers"))
    breaker[b.at("tenant").get<std::string>()] |= b.at("open").get<bool>();
  std::vector<TopRow> rows;
  for (const auto& s : stages.at("series")) {
    TopRow r;
    r.tenant = s.at("tenant").get<std::string>();
    r.stage = s.at("stage").get<std::string>();
    r.largest = s.at("largest_component").get<std::string>();
    r.count = s.at("count").get<uint64_t>();
    r.p50_s = s.at("p50_s").get<double>();
    r.p99_s = s.at("p99_s").get<double>();
    r.glitches = s.at("glitches").get<double>();
    if (auto it = cache.find(r.tenant); it != cache.end()) {
      r.cache_ratio = it->second.first;
      r.cache_breakdown = it->second.second;
    }
    if (auto it = breaker.find(r.tenant); it != breaker.end()) r.breaker_open = it->second;
    rows.push_back(std::move(r));
  }
  return rows;
}

namespace {

std::vector<TopRow> sorted(const std::vector<TopRow>& input, TopSort sort) {
  std::vector<TopRow> rows = input;
  std::stable_sort(rows.begin(), rows.end(), [&](const TopRow& a, const TopRow& b) {
    switch (sort) {
      case TopSort::p99: return a.p99_s > b.p99_s;
      case TopSort::p50: return a.p50_s > b.p50_s;
      case TopSort::glitches: return a.glitches > b.glitches;
      case TopSort::count: return a.count > b.count;
      case TopSort::tenant: return std::tie(a.tenant, a.stage) < std::tie(b.tenant, b.stage);
    }
    return false;
  });
  return rows;
}

using ColumnWidths = std::array<size_t, std::size(kColumns)>;

// The columns' widths for the shown ones to fit: narrow screens shrink the name columns first.
ColumnWidths column_widths(const std::vector<size_t>& shown, size_t width) {
  size_t used = 0;
  for (size_t i : shown) used += kColumns[i].width + 1;
  ColumnWidths w{};
  for (size_t i = 0; i < std::size(kColumns); ++i) w[i] = kColumns[i].width;
  for (size_t i : {0u, 1u}) {
    while (used > width && w[i] > 5) {
      --w[i];
      --used;
    }
  }
  return w;
}

// The text of row r in column i (kColumns).
std::string cell(const TopRow& r, size_t i) {
  switch (i) {
    case 0: return r.tenant;
    case 1: return r.stage;
    case 2: return std::to_string(r.count);
    case 3: return duration(r.p50_s);
    case 4: return duration(r.p99_s);
    case 5: return r.largest.empty() ? "-" : r.largest;
    case 6: return fmt::format("{:.0f}", r.glitches);
    case 7:
      return r.cache_ratio
                 ? fmt::format("{:.0f}%{}", *r.cache_ratio * 100, r.cache_breakdown ? "!" : "")
                 : "-";
    case 8: return r.breaker_open ? (*r.breaker_open ? "OPEN" : "closed") : "-";
  }
  return "";
}

}  // namespace

std::vector<std::string> render_top(const std::vector<TopRow>& input, const TopScreen& screen) {
  const std::vector<TopRow> rows = sorted(input, screen.sort);
  const size_t width = static_cast<size_t>(std::max(screen.width, 10));
  const bool color = screen.color;
  std::vector<std::string> out;
  auto line = [&](std::string text, const char* style = nullptr) {
    text = fit(text, width);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out.push_back(color && style ? std::string(style) + text + kReset : text);
  };
  line(fmt::format("tailcause top - {} - sort: {} - {}", screen.source, top_sort_name(screen.sort),
                   screen.status),
       kBold);
  line("keys: p P99  m P50  g glitches  n count  t tenant  q quit");
  std::vector<size_t> shown;
  for (size_t i = 0; i < std::size(kColumns); ++i)
    if (screen.width >= kColumns[i].min_screen) shown.push_back(i);
  const ColumnWidths w = column_widths(shown, width);
  std::string header;
  for (size_t i : shown) header += fit(kColumns[i].title, w[i], kColumns[i].right) + " ";
  line(header, kReverse);
  if (rows.empty()) line("no stages seen in the last minute");
  for (const TopRow& r : rows) {
    if (static_cast<int>(out.size()) >= screen.height) break;
    std::string text;
    for (size_t i : shown) text += fit(cell(r, i), w[i], kColumns[i].right) + " ";
    const bool alarm = r.glitches > 0 || r.cache_breakdown || r.breaker_open.value_or(false);
    line(text, alarm ? kRed : nullptr);
  }
  if (static_cast<int>(out.size()) > screen.height) out.resize(std::max(screen.height, 1));
  return out;
}

}  // namespace tailcause::core
