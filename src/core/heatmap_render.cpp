// SPDX-License-Identifier: Apache-2.0
#include "core/heatmap_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

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

std::string render_heatmap_svg(const HeatmapGrid& g) {
  const size_t nx = std::max<size_t>(1, g.x_labels.size()),
               ny = std::max<size_t>(1, g.y_labels.size());
  const int cw = std::clamp(static_cast<int>(720 / nx), 4, 32);
  const int ch = std::clamp(static_cast<int>(400 / ny), 6, 20);
  const int left = 200, top = 30, bottom = 40;
  const int w = left + cw * static_cast<int>(nx) + 20, h = top + ch * static_cast<int>(ny) + bottom;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"#fff\"/>\n"
      "<text x=\"8\" y=\"18\" font-size=\"13\">{2}</text>\n",
      w, h, escape_xml(g.title));
  const size_t ystep = (ny + 19) / 20;
  for (size_t i = 0; i < g.y_labels.size(); i += ystep) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4,
                       top + ch * static_cast<int>(ny - i) - 2, escape_xml(g.y_labels[i]));
  }
  const size_t xstep = (nx + 7) / 8;
  for (size_t i = 0; i < g.x_labels.size(); i += xstep) {
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left + cw * static_cast<int>(i),
                       top + ch * static_cast<int>(ny) + 14, escape_xml(g.x_labels[i]));
  }
  out +=
      fmt::format("<text x=\"{}\" y=\"{}\">{} \u2192</text>\n", left, h - 8, escape_xml(g.x_title));
  out += fmt::format("<text x=\"8\" y=\"{}\">{} \u2191</text>\n", top + 12, escape_xml(g.y_title));
  for (const auto& c : g.cells) {
    out += fmt::format(
        "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "fill=\"#{:06x}\"><title>{}</title></rect>\n",
        left + cw * static_cast<int>(c.x), top + ch * static_cast<int>(ny - 1 - c.y), cw - 1,
        ch - 1, heat_color(c.value, g.max), escape_xml(c.tip));
  }
  if (g.cells.empty())
    out += fmt::format("<text x=\"{}\" y=\"{}\">no data</text>\n", left, top + 20);
  out += "</svg>\n";
  return out;
}

Raster render_heatmap_raster(const HeatmapGrid& g, int cell_px) {
  cell_px = std::clamp(cell_px, 2, 64);
  const int margin = 8;
  const int nx = static_cast<int>(std::max<size_t>(1, g.x_labels.size()));
  const int ny = static_cast<int>(std::max<size_t>(1, g.y_labels.size()));
  Raster r;
  r.width = 2 * margin + nx * cell_px;
  r.height = 2 * margin + ny * cell_px;
  r.rgb.assign(static_cast<size_t>(r.width) * r.height * 3, 0xff);
  // The grid's frame, so an empty map is not mistaken for a blank file.
  auto put = [&](int x, int y, uint32_t c) {
    uint8_t* p = &r.rgb[(static_cast<size_t>(y) * r.width + x) * 3];
    p[0] = c >> 16 & 0xff, p[1] = c >> 8 & 0xff, p[2] = c & 0xff;
  };
  for (int x = margin - 1; x <= r.width - margin; ++x)
    put(x, margin - 1, 0xcccccc), put(x, r.height - margin, 0xcccccc);
  for (int y = margin - 1; y <= r.height - margin; ++y)
    put(margin - 1, y, 0xcccccc), put(r.width - margin, y, 0xcccccc);
  for (const auto& c : g.cells) {
    const uint32_t color = heat_color(c.value, g.max);
    const int x0 = margin + static_cast<int>(c.x) * cell_px;
    const int y0 = margin + (ny - 1 - static_cast<int>(c.y)) * cell_px;
    for (int y = y0; y < y0 + cell_px - 1; ++y)
      for (int x = x0; x < x0 + cell_px - 1; ++x) put(x, y, color);
  }
  return r;
}

}  // namespace tailcause::core
