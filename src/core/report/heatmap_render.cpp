// SPDX-License-Identifier: Apache-2.0
#include "core/report/heatmap_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/record/utf8.h"

namespace tailcause::core {
namespace {

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
  }
  return out;
}

std::string duration(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 0.01) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.3f} ms", s * 1e3);
}

std::string clock_of(int64_t unix_s, bool hours_only) {
  const time_t t = static_cast<time_t>(unix_s);
  tm local{};
  localtime_r(&t, &local);
  char buf[16];
  strftime(buf, sizeof buf, hours_only ? "%H:00" : "%H:%M:%S", &local);
  return buf;
}

// hsl(h, s, l) with s, l in [0, 1] -> 0xRRGGBB.
uint32_t hsl(double h, double s, double l) {
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = h / 60;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  const double m = l - c / 2;
  auto byte = [&](double v) {
    return static_cast<uint32_t>(std::lround(std::clamp(v + m, 0.0, 1.0) * 255));
  };
  return byte(r) << 16 | byte(g) << 8 | byte(b);
}

}  // namespace

uint32_t heat_color(double value, double max) {
  const double x = max > 0 ? std::min(1.0, std::log1p(std::max(0.0, value)) / std::log1p(max)) : 0;
  return hsl(220 - 220 * x, 0.8, 0.92 - 0.5 * x);
}

std::string heatmap_api_path(const std::string& metric) {
  if (metric.rfind("stage:", 0) == 0 && metric.size() > 6)
    return "/api/v1/heatmap/stage?since=900&step=10&stage=" + metric.substr(6);
  if (metric == "tcp_rtt") return "/api/v1/heatmap/tcp?metric=rtt";
  if (metric == "tcp_duration") return "/api/v1/heatmap/tcp?metric=duration";
  if (metric == "layers") return "/api/v1/heatmap/layers?since=900";
  return "";
}

HeatmapGrid heatmap_grid(const std::string& metric, const nlohmann::json& r) {
  HeatmapGrid g;
  if (metric.rfind("stage:", 0) == 0) {
    g.title = "stage " + r.at("stage").get<std::string>() + ": stages per latency bucket";
    g.x_title = "time";
    g.y_title = "latency (upper bound)";
    for (const auto& t : r.at("x")) g.x_labels.push_back(clock_of(t.get<int64_t>(), false));
    for (const auto& b : r.at("bounds")) g.y_labels.push_back(duration(b.get<double>()));
    g.y_labels.push_back("+Inf");
    for (const auto& c : r.at("cells")) {
      HeatmapCell cell{c.at(0).get<size_t>(), c.at(1).get<size_t>(), c.at(2).get<double>(), ""};
      if (cell.x >= g.x_labels.size() || cell.y >= g.y_labels.size()) continue;
      cell.tip = fmt::format("{}, <= {}: {:.0f} stages", g.x_labels[cell.x], g.y_labels[cell.y],
                             cell.value);
      g.cells.push_back(std::move(cell));
    }
  } else if (metric.rfind("tcp_", 0) == 0) {
    g.title =
        fmt::format("TCP {} P99 per service pair and hour", r.at("metric").get<std::string>());
    g.x_title = "hour";
    g.y_title = "service pair";
    for (const auto& h : r.at("hours")) g.x_labels.push_back(clock_of(h.get<int64_t>(), true));
    for (const auto& p : r.at("pairs"))
      g.y_labels.push_back(p.at("local").get<std::string>() + " -> " +
                           p.at("remote").get<std::string>());
    for (const auto& c : r.at("cells")) {
      HeatmapCell cell{c.at(1).get<size_t>(), c.at(0).get<size_t>(), c.at(2).get<double>(), ""};
      if (cell.x >= g.x_labels.size() || cell.y >= g.y_labels.size()) continue;
      cell.tip = fmt::format("{} at {}: P99 {} ({} connections)", g.y_labels[cell.y],
                             g.x_labels[cell.x], duration(cell.value), c.at(3).get<uint64_t>());
      g.cells.push_back(std::move(cell));
    }
  } else {
    g.title = "layer x batch size, P99";
    g.x_title = "batch size";
    g.y_title = "layer";
    for (const auto& b : r.at("batch_sizes")) g.x_labels.push_back(b.get<std::string>());
    for (const auto& l : r.at("layers")) g.y_labels.push_back(l.get<std::string>());
    for (const auto& c : r.at("cells")) {
      HeatmapCell cell{c.at(1).get<size_t>(), c.at(0).get<size_t>(), c.at(2).get<double>(), ""};
      if (cell.x >= g.x_labels.size() || cell.y >= g.y_labels.size()) continue;
      cell.tip = fmt::format("layer {}, batch {}: P99 {} ({})", g.y_labels[cell.y],
                             g.x_labels[cell.x], duration(cell.value), c.at(3).get<uint64_t>());
      g.cells.push_back(std::move(cell));
    }
  }
  for (const auto& c : g.cells) g.max = std::max(g.max, c.value);
  return g;
}

HeatmapLayout heatmap_layout(const HeatmapGrid& g, int left) {
  HeatmapLayout l;
  l.nx = static_cast<int>(std::max<size_t>(1, g.x_labels.size()));
  l.ny = static_cast<int>(std::max<size_t>(1, g.y_labels.size()));
  l.cw = std::clamp(720 / l.nx, 4, 32);
  l.ch = std::clamp(400 / l.ny, 6, 20);
  l.left = left;
  l.top = 30;
  l.width = left + l.cw * l.nx + 20;
  l.height = l.top + l.ch * l.ny + 40;
  l.ystep = static_cast<size_t>(l.ny + 19) / 20;
  // At most 8 x labels, and (estimating 7 pixels a character, the same for the SVG and the
  // raster so that both pick the same labels) none running into the next on a narrow grid.
  size_t longest = 0;
  for (const auto& s : g.x_labels) longest = std::max(longest, utf8_code_points(s));
  const size_t pitch = 7 * longest + 4;
  l.xstep = std::max(static_cast<size_t>(l.nx + 7) / 8, (pitch + l.cw - 1) / l.cw);
  return l;
}

std::vector<HeatmapText> heatmap_texts(const HeatmapGrid& g, const HeatmapLayout& l) {
  using Kind = HeatmapText::Kind;
  std::vector<HeatmapText> out;
  out.push_back({Kind::title, g.title, 8, 18, kHeatmapTitlePx, false});
  for (size_t i = 0; i < g.y_labels.size(); i += l.ystep)
    out.push_back({Kind::y_label, g.y_labels[i], l.left - 4,
                   l.top + l.ch * (l.ny - static_cast<int>(i)) - 2, kHeatmapLabelPx, true});
  for (size_t i = 0; i < g.x_labels.size(); i += l.xstep)
    out.push_back({Kind::x_label, g.x_labels[i], l.cell_x(i), l.top + l.ch * l.ny + 14,
                   kHeatmapLabelPx, false});
  out.push_back(
      {Kind::x_title, g.x_title + " \u2192", l.left, l.height - 8, kHeatmapLabelPx, false});
  out.push_back({Kind::y_title, g.y_title + " \u2191", 8, l.top + 12, kHeatmapLabelPx, false});
  if (g.cells.empty())
    out.push_back({Kind::no_data, "no data", l.left, l.top + 20, kHeatmapLabelPx, false});
  return out;
}

std::string render_heatmap_svg(const HeatmapGrid& g) {
  const HeatmapLayout l = heatmap_layout(g);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"{2}\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
      l.width, l.height, kHeatmapLabelPx);
  for (const auto& t : heatmap_texts(g, l)) {
    out += fmt::format("<text x=\"{}\" y=\"{}\"{}{}>{}</text>\n", t.x, t.baseline,
                       t.px == kHeatmapLabelPx ? "" : fmt::format(" font-size=\"{}\"", t.px),
                       t.end_anchor ? " text-anchor=\"end\"" : "", escape_xml(t.text));
  }
  for (const auto& c : g.cells) {
    out += fmt::format(
        "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "fill=\"#{:06x}\"><title>{}</title></rect>\n",
        l.cell_x(c.x), l.cell_y(c.y), l.cw - 1, l.ch - 1, heat_color(c.value, g.max),
        escape_xml(c.tip));
  }
  out += "</svg>\n";
  return out;
}

Raster render_heatmap_raster(const HeatmapGrid& g, const TextPainter& painter) {
  using Kind = HeatmapText::Kind;
  // The y title and the widest y label side by side (the title's line meets the top label).
  int y_title = 0, widest = 0;
  for (const auto& t : heatmap_texts(g, heatmap_layout(g))) {
    if (t.kind == Kind::y_title) y_title = painter.width(t.text, t.px);
    if (t.kind == Kind::y_label) widest = std::max(widest, painter.width(t.text, t.px));
  }
  const HeatmapLayout l = heatmap_layout(g, std::max(kHeatmapLeft, 8 + y_title + 8 + widest + 4));
  const std::vector<HeatmapText> texts = heatmap_texts(g, l);
  Raster r;
  r.width = l.width;
  for (const auto& t : texts)
    if (!t.end_anchor) r.width = std::max(r.width, t.x + painter.width(t.text, t.px) + 8);
  r.height = l.height;
  r.rgb.assign(static_cast<size_t>(r.width) * r.height * 3, 0xff);
  auto put = [&](int x, int y, uint32_t c) {
    uint8_t* p = &r.rgb[(static_cast<size_t>(y) * r.width + x) * 3];
    p[0] = c >> 16 & 0xff, p[1] = c >> 8 & 0xff, p[2] = c & 0xff;
  };
  // The grid's frame, one pixel outside the cells.
  const int x0 = l.left - 1, x1 = l.left + l.cw * l.nx, y0 = l.top - 1, y1 = l.top + l.ch * l.ny;
  for (int x = x0; x <= x1; ++x) put(x, y0, 0xcccccc), put(x, y1, 0xcccccc);
  for (int y = y0; y <= y1; ++y) put(x0, y, 0xcccccc), put(x1, y, 0xcccccc);
  for (const auto& c : g.cells) {
    const uint32_t color = heat_color(c.value, g.max);
    const int cx = l.cell_x(c.x), cy = l.cell_y(c.y);
    for (int y = cy; y < cy + l.ch - 1; ++y)
      for (int x = cx; x < cx + l.cw - 1; ++x) put(x, y, color);
  }
  for (const auto& t : texts) {
    const int x = t.end_anchor ? t.x - painter.width(t.text, t.px) : t.x;
    painter.draw(r, x, t.baseline, t.text, t.px, 0x000000);
  }
  return r;
}

}  // namespace tailcause::core
