// SPDX-License-Identifier: Apache-2.0
// `tailcause heatmap`'s drawing: the API's three heatmap shapes become grids, SVG with one
// rect per cell and escaped labels, a raster with the cells coloured, the page's colour scale.
#include <gtest/gtest.h>

#include "core/heatmap_render.h"

namespace tailcause::core {
namespace {

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(HeatmapRender, MetricNamesMapToApiPaths) {
  EXPECT_EQ(heatmap_api_path("stage:generation"),
            "/api/v1/heatmap/stage?since=900&step=10&stage=generation");
  EXPECT_EQ(heatmap_api_path("tcp_rtt"), "/api/v1/heatmap/tcp?metric=rtt");
  EXPECT_EQ(heatmap_api_path("layers"), "/api/v1/heatmap/layers?since=900");
  EXPECT_EQ(heatmap_api_path("stage:"), "");
  EXPECT_EQ(heatmap_api_path("cpu"), "");
}

TEST(HeatmapRender, StageHeatmapToSvgAndRaster) {
  const auto reply = nlohmann::json::parse(R"({"stage": "gen<e>", "x": [1700000000, 1700000010],
      "bounds": [0.001, 0.01], "cells": [[0, 0, 3], [1, 2, 9], [5, 5, 1]], "max": 9})");
  const HeatmapGrid g = heatmap_grid("stage:gen", reply);
  EXPECT_EQ(g.x_labels.size(), 2u);
  EXPECT_EQ(g.y_labels.back(), "+Inf");
  ASSERT_EQ(g.cells.size(), 2u);  // the out-of-range cell is dropped
  EXPECT_DOUBLE_EQ(g.max, 9);
  const std::string svg = render_heatmap_svg(g);
  EXPECT_EQ(count(svg, "<rect class=\"cell\""), 2u);
  EXPECT_NE(svg.find("gen&lt;e&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("gen<e>"), std::string::npos);
  const Raster r = render_heatmap_raster(g, 10);
  EXPECT_EQ(r.rgb.size(), static_cast<size_t>(r.width) * r.height * 3);
  const uint32_t hot = heat_color(9, 9);
  size_t hot_pixels = 0;
  for (size_t i = 0; i < r.rgb.size(); i += 3)
    if ((uint32_t(r.rgb[i]) << 16 | uint32_t(r.rgb[i + 1]) << 8 | r.rgb[i + 2]) == hot)
      ++hot_pixels;
  EXPECT_EQ(hot_pixels, 81u);  // one 9x9 cell
}

TEST(HeatmapRender, TcpAndLayerShapes) {
  const auto tcp = heatmap_grid("tcp_rtt", nlohmann::json::parse(R"({"metric": "rtt",
      "pairs": [{"local": "a:*", "remote": "b:80"}], "hours": [1700000000],
      "cells": [[0, 0, 0.002, 12]], "max": 0.002})"));
  ASSERT_EQ(tcp.cells.size(), 1u);
  EXPECT_EQ(tcp.y_labels[0], "a:* -> b:80");
  const auto layers = heatmap_grid("layers", nlohmann::json::parse(R"({"layers": ["0", "1"],
      "batch_sizes": ["8"], "cells": [[1, 0, 0.01, 4]], "max": 0.01})"));
  ASSERT_EQ(layers.cells.size(), 1u);
  EXPECT_EQ(layers.cells[0].y, 1u);
  EXPECT_EQ(layers.cells[0].x, 0u);
  EXPECT_THROW(heatmap_grid("layers", nlohmann::json::parse("{}")), nlohmann::json::exception);
}

TEST(HeatmapRender, ColourScaleRunsFromPaleToHot) {
  EXPECT_EQ(heat_color(0, 10), heat_color(0, 0));
  EXPECT_NE(heat_color(10, 10), heat_color(0, 10));
  const uint32_t hot = heat_color(10, 10);
  EXPECT_GT(hot >> 16 & 0xff, hot & 0xff);  // red over blue
}

}  // namespace
}  // namespace tailcause::core
