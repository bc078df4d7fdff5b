// SPDX-License-Identifier: Apache-2.0
// `tailcause top`'s screen, from the JSON API's replies (/stages, /caches, /contention): one
// line per tenant and stage with P50/P99, count, largest component, glitches, the tenant's cache
// breakdown and breaker. Pure: the command does the HTTP and the terminal; this lays out text
// for a given width and height, with or without colour.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tailcause::core {

struct TopRow {
  std::string tenant, stage, largest;
  uint64_t count = 0;
  double p50_s = 0, p99_s = 0, glitches = 0;
  std::optional<double> cache_ratio;  // the tenant's worst cache, (miss + stale) / lookups
  bool cache_breakdown = false;
  std::optional<bool> breaker_open;  // any of the tenant's breakers; nullopt: none known
};

enum class TopSort { p99, p50, glitches, count, tenant };

// The sort a key selects ('p' P99, 'm' P50, 'g' glitches, 'n' count, 't' tenant), or nullopt.
std::optional<TopSort> top_sort_for_key(char key);
const char* top_sort_name(TopSort s);

// Throws nlohmann::json::exception on replies of another shape.
std::vector<TopRow> top_rows(const nlohmann::json& stages, const nlohmann::json& caches,
                             const nlohmann::json& contention);

struct TopScreen {
  int width = 80, height = 24;
  bool color = true;
  TopSort sort = TopSort::p99;
  std::string source;  // the URL shown in the title line
  std::string status;  // "updated 14:03:07" or an error
};

// The screen's lines, none longer than width (in characters, colour codes not counted), at
// most height of them; wider terminals get more columns.
std::vector<std::string> render_top(const std::vector<TopRow>& rows, const TopScreen& screen);

}  // namespace tailcause::core
