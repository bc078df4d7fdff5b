// SPDX-License-Identifier: Apache-2.0
// `tailcause heatmap`: the web UI's heatmaps as files. The API's heatmap replies become one
// grid (axes, cells with a value), drawn as SVG (with a tooltip per cell) or as an RGB raster
// for PNG, both labelled from one layout, with the page's colour scale (log-scaled, light blue
// to red). Pure: the raster's text comes through a TextPainter the caller provides.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
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

// Where a heatmap's parts go, in pixels, for the SVG and the raster alike (so that the two
// show the same labels in the same places). `left` is the margin for the y labels.
struct HeatmapLayout {
  int nx = 1, ny = 1;  // columns and rows, at least one each
  int cw = 0, ch = 0;  // a cell's pitch; the cell is one pixel smaller (the gap)
  int left = 0, top = 0;
  int width = 0, height = 0;
  size_t xstep = 1, ystep = 1;  // every xstep-th x label, every ystep-th y label
  int cell_x(size_t x) const { return left + cw * static_cast<int>(x); }
  int cell_y(size_t y) const { return top + ch * (ny - 1 - static_cast<int>(y)); }
};
// The SVG's margin for the y labels; the raster widens it where its labels need more.
inline constexpr int kHeatmapLeft = 200;
HeatmapLayout heatmap_layout(const HeatmapGrid& grid, int left = kHeatmapLeft);

// One piece of a heatmap's text: title, axis titles, tick labels, "no data".
struct HeatmapText {
  enum class Kind { title, y_title, x_title, y_label, x_label, no_data };
  Kind kind;
  std::string text;  // UTF-8, not escaped
  int x = 0, baseline = 0;
  int px = 0;               // font size (pixels per em)
  bool end_anchor = false;  // x is where the text ends (right-aligned), not where it starts
};
inline constexpr int kHeatmapLabelPx = 10, kHeatmapTitlePx = 13;
std::vector<HeatmapText> heatmap_texts(const HeatmapGrid& grid, const HeatmapLayout& layout);

std::string render_heatmap_svg(const HeatmapGrid& grid);

struct Raster {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3, rows top to bottom
};

// Draws text into a raster; core has no fonts, so the caller brings them (cli/font_painter).
class TextPainter {
 public:
  virtual ~TextPainter() = default;
  // How far `text` (UTF-8) advances at `px` pixels per em.
  virtual int width(std::string_view text, int px) const = 0;
  // Draws `text` from x with its baseline at baseline_y, in 0xRRGGBB over what is there;
  // what falls outside the raster is clipped.
  virtual void draw(Raster& r, int x, int baseline_y, std::string_view text, int px,
                    uint32_t rgb) const = 0;
};

// The SVG's layout and text as pixels: cells with a 1-pixel gap, the grid framed, the labels
// drawn by `painter`. Wider than the SVG only where the measured labels would not fit.
Raster render_heatmap_raster(const HeatmapGrid& grid, const TextPainter& painter);

// The page's colour for `value` on a log scale up to `max`, as 0xRRGGBB.
uint32_t heat_color(double value, double max);

}  // namespace tailcause::core
