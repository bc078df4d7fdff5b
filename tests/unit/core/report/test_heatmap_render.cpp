// SPDX-License-Identifier: Apache-2.0
// `tailcause heatmap`'s drawing: the API's three heatmap shapes become grids, SVG with one
// rect per cell and escaped labels, a raster with the cells coloured and the same labels where
// the SVG has them (through a fake painter of fixed-width boxes), the page's colour scale.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/report/heatmap_render.h"

namespace tailcause::core {
namespace {

// Every character (code point) kAdvance pixels wide at any size, drawn as a solid box from the
// baseline up; each call recorded.
class BoxPainter : public TextPainter {
 public:
  static constexpr int kAdvance = 6;
  struct Call {
    std::string text;
    int x, baseline, px;
    uint32_t rgb;
  };
  int width(std::string_view text, int) const override {
    return kAdvance * static_cast<int>(std::count_if(text.begin(), text.end(),
                                                     [](char c) { return (c & 0xc0) != 0x80; }));
  }
  void draw(Raster& r, int x, int baseline, std::string_view text, int px,
            uint32_t rgb) const override {
    calls.push_back({std::string(text), x, baseline, px, rgb});
    for (int y = std::max(0, baseline - px * 7 / 10); y < std::min(r.height, baseline); ++y)
      for (int xx = std::max(0, x); xx < std::min(r.width, x + width(text, px)); ++xx) {
        uint8_t* p = &r.rgb[(static_cast<size_t>(y) * r.width + xx) * 3];
        p[0] = rgb >> 16 & 0xff, p[1] = rgb >> 8 & 0xff, p[2] = rgb & 0xff;
      }
  }
  // The call that drew `text`, or null.
  const Call* find(const std::string& text) const {
    const auto it =
        std::find_if(calls.begin(), calls.end(), [&](const Call& c) { return c.text == text; });
    return it == calls.end() ? nullptr : &*it;
  }
  mutable std::vector<Call> calls;
};

// The same widths, no ink: what the raster is without its text.
class NoInkPainter : public BoxPainter {
  void draw(Raster&, int, int, std::string_view, int, uint32_t) const override {}
};

uint32_t pixel(const Raster& r, int x, int y) {
  const uint8_t* p = &r.rgb[(static_cast<size_t>(y) * r.width + x) * 3];
  return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
}

// 30 columns of clock times, 25 latency rows (so every 4th x and every 2nd y label).
HeatmapGrid stage_grid() {
  HeatmapGrid g;
  g.title = "stage gen: stages per latency bucket";
  g.x_title = "time";
  g.y_title = "latency (upper bound)";
  for (int i = 0; i < 30; ++i) g.x_labels.push_back(fmt::format("12:00:{:02}", i));
  for (int i = 0; i < 25; ++i) g.y_labels.push_back(fmt::format("{} ms", i + 1));
  g.cells = {{0, 0, 1, ""}, {29, 24, 9, ""}};
  g.max = 9;
  return g;
}

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
  const Raster r = render_heatmap_raster(g, BoxPainter());
  EXPECT_EQ(r.rgb.size(), static_cast<size_t>(r.width) * r.height * 3);
  const uint32_t hot = heat_color(9, 9);
  size_t hot_pixels = 0;
  for (size_t i = 0; i < r.rgb.size(); i += 3)
    if ((uint32_t(r.rgb[i]) << 16 | uint32_t(r.rgb[i + 1]) << 8 | r.rgb[i + 2]) == hot)
      ++hot_pixels;
  EXPECT_EQ(hot_pixels, 31u * 19u);  // one cell: 2 columns are 32 px apart, 3 rows 20 px
}

TEST(HeatmapRender, RasterDrawsTheSvgLabelsWhereTheSvgHasThem) {
  const HeatmapGrid g = stage_grid();
  const BoxPainter painter;
  const Raster r = render_heatmap_raster(g, painter);
  // The SVG's geometry: labels fit the 200-pixel left margin, cells 24 x 16 (720/30, 400/25).
  EXPECT_EQ(r.width, 200 + 30 * 24 + 20);
  EXPECT_EQ(r.height, 30 + 25 * 16 + 40);
  const auto* title = painter.find(g.title);
  ASSERT_NE(title, nullptr);
  EXPECT_EQ(std::tie(title->x, title->baseline, title->px), std::tuple(8, 18, 13));
  const auto* y_title = painter.find("latency (upper bound) \u2191");
  ASSERT_NE(y_title, nullptr);
  EXPECT_EQ(std::tie(y_title->x, y_title->baseline, y_title->px), std::tuple(8, 42, 10));
  const auto* x_title = painter.find("time \u2192");
  ASSERT_NE(x_title, nullptr);
  EXPECT_EQ(std::tie(x_title->x, x_title->baseline), std::tuple(200, r.height - 8));
  // Every step-th of `labels` drawn where `place(i, width)` says (x, baseline), the others not.
  const auto expect_every = [&](const std::vector<std::string>& labels, size_t step,
                                const auto& place) {
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto* label = painter.find(labels[i]);
      if (i % step) {
        EXPECT_EQ(label, nullptr) << labels[i];
      } else if (label == nullptr) {
        ADD_FAILURE() << "no " << labels[i];
      } else {
        EXPECT_EQ(std::pair(label->x, label->baseline),
                  place(static_cast<int>(i), painter.width(labels[i], label->px)))
            << labels[i];
      }
    }
  };
  // Every 2nd y label (25 rows, at most 20 labels), right-aligned 4 pixels left of the grid,
  // its baseline 2 pixels above its row's bottom.
  expect_every(g.y_labels, 2,
               [](int i, int width) { return std::pair(196 - width, 30 + 16 * (25 - i) - 2); });
  // Every 4th x label (at most 8), under its column.
  expect_every(g.x_labels, 4,
               [](int i, int) { return std::pair(200 + 24 * i, 30 + 25 * 16 + 14); });
  EXPECT_EQ(painter.find("no data"), nullptr);
  EXPECT_EQ(painter.calls.size(), 1u + 13u + 8u + 2u);
  for (const auto& c : painter.calls) EXPECT_EQ(c.rgb, 0x000000u) << c.text;
}

TEST(HeatmapRender, SvgAndRasterShowTheSameText) {
  for (size_t columns : {1, 3, 8, 30}) {
    HeatmapGrid g = stage_grid();
    g.x_labels.resize(columns);
    g.cells = {{0, 0, 1, ""}};
    const BoxPainter painter;
    render_heatmap_raster(g, painter);
    const std::string svg = render_heatmap_svg(g);
    EXPECT_EQ(count(svg, "<text "), painter.calls.size());
    for (const auto& c : painter.calls) {
      const auto at = svg.find(">" + c.text + "</text>");
      ASSERT_NE(at, std::string::npos) << c.text;
      // The same place (a y label's x is where it ends; the margin is the SVG's here).
      const std::string element = svg.substr(svg.rfind("<text", at), at - svg.rfind("<text", at));
      const bool end = element.find("text-anchor=\"end\"") != std::string::npos;
      const int x = c.x + (end ? painter.width(c.text, c.px) : 0);
      EXPECT_EQ(element.rfind(fmt::format("<text x=\"{}\" y=\"{}\"", x, c.baseline), 0), 0u)
          << element;
    }
  }
}

TEST(HeatmapRender, XLabelsDoNotRunIntoEachOtherOnANarrowGrid) {
  HeatmapGrid g = stage_grid();
  g.x_labels.resize(3);  // 32-pixel columns: an 8-character clock needs two
  const BoxPainter painter;
  render_heatmap_raster(g, painter);
  EXPECT_NE(painter.find("12:00:00"), nullptr);
  EXPECT_EQ(painter.find("12:00:01"), nullptr);
  EXPECT_NE(painter.find("12:00:02"), nullptr);
  g.x_labels = {"8", "16", "32"};  // short labels: all of them
  const BoxPainter short_painter;
  render_heatmap_raster(g, short_painter);
  for (const auto& l : g.x_labels) EXPECT_NE(short_painter.find(l), nullptr) << l;
}

TEST(HeatmapRender, RasterMarginsGrowToFitMeasuredText) {
  HeatmapGrid g;
  g.title = std::string(100, 'T');  // 600 pixels, more than the grid and its margins
  g.x_title = "hour";
  g.y_title = "service pair";
  g.x_labels = {"13:00"};
  g.y_labels = {"short", std::string(50, 'p')};  // 300 pixels
  g.cells = {{0, 1, 0.5, ""}};
  g.max = 0.5;
  const BoxPainter painter;
  const Raster r = render_heatmap_raster(g, painter);
  // The y title (14 characters with its arrow) and the widest label side by side.
  const int left = 8 + 6 * 14 + 8 + 300 + 4;
  const auto* wide = painter.find(g.y_labels[1]);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->x, left - 4 - 300);
  EXPECT_GT(wide->x, 8 + 6 * 14);                       // clear of the y title
  EXPECT_EQ(pixel(r, left, 30), heat_color(0.5, 0.5));  // the cell moved right with the margin
  EXPECT_EQ(pixel(r, left - 1, 30), 0xccccccu);         // the frame
  EXPECT_GE(r.width, 8 + 600 + 8);                      // the title is not clipped
}

TEST(HeatmapRender, RasterTextIsInk) {
  const HeatmapGrid g = stage_grid();
  const BoxPainter painter;
  const Raster with = render_heatmap_raster(g, painter);
  const Raster without = render_heatmap_raster(g, NoInkPainter());
  ASSERT_EQ(with.rgb.size(), without.rgb.size());
  size_t changed = 0;
  for (int y = 0; y < with.height; ++y)
    for (int x = 0; x < with.width; ++x)
      if (pixel(with, x, y) != pixel(without, x, y)) {
        ++changed;
        EXPECT_EQ(pixel(with, x, y), 0u) << x << "," << y;
      }
  EXPECT_GT(changed, 1000u);
  EXPECT_EQ(pixel(with, 10, 17), 0u);            // in the title
  EXPECT_EQ(pixel(without, 10, 17), 0xffffffu);  // background without it
}

TEST(HeatmapRender, EmptyGridSaysNoData) {
  HeatmapGrid g = stage_grid();
  g.cells.clear();
  g.max = 0;
  const BoxPainter painter;
  const Raster r = render_heatmap_raster(g, painter);
  const auto* note = painter.find("no data");
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(std::tie(note->x, note->baseline), std::tuple(200, 50));
  EXPECT_EQ(pixel(r, 201, 49), 0u);
  EXPECT_NE(render_heatmap_svg(g).find(">no data</text>"), std::string::npos);
  // Not even axes: still a title and "no data".
  const BoxPainter bare_painter;
  render_heatmap_raster(HeatmapGrid{}, bare_painter);
  EXPECT_NE(bare_painter.find("no data"), nullptr);
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
