// SPDX-License-Identifier: Apache-2.0
// `tailcause heatmap`: the web UI's heatmaps as files. The API's heatmap replies become one
// grid (axes, cells with a value), drawn as SVG (labelled, with a tooltip per cell) or as an
// RGB raster for PNG, with the page's colour scale (log-scaled, light blue to red). Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tailcause::core {

struct HeatmapCell {
  size_t x = 0, y = 0;  // column and row (row 0 at the bottom)
  double value = 0;     // what the colour shows (a count or a P99 in seconds)
  std::string tip;
};

struct HeatmapGrid {
  std::string title;
  std::string x_title, y_title;
  std::vector<std::string> x_labels, y_labels;
  std::vector<HeatmapCell> cells;
  double max = 0;
};

// The metrics `tailcause heatmap --metric` knows, and the API path each reads
// ("stage:generation" -> /heatmap/stage?stage=generation).
// Returns "" for an unknown metric.
std::string heatmap_api_path(const std::string& metric);
// Builds the grid from the API's reply to heatmap_api_path(metric). Throws
// nlohmann::json::exception on another shape.
HeatmapGrid heatmap_grid(const std::string& metric, const nlohmann::json& reply);

std::string render_heatmap_svg(const HeatmapGrid& grid);

struct Raster {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3, rows top to bottom
};
// Cells of cell_px square with a 1-pixel gap, a margin around; no text (the SVG has labels).
Raster render_heatmap_raster(const HeatmapGrid& grid, int cell_px);

// The page's colour for `value` on a log scale up to `max`, as 0xRRGGBB.
uint32_t heat_color(double value, double max);

}  // namespace tailcause::core
