// SPDX-License-Identifier: Apache-2.0
// `tailcause heatmap --metric NAME --out FILE.svg|FILE.png`: the web UI's heatmaps as files,
// read from the JSON API (core/heatmap_render draws them; PNG through libpng, its labels
// through FreeType with fontconfig's sans-serif or --font).
#include <fmt/format.h>
#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/font_lookup.h"
#include "cli/font_painter.h"
#include "core/report/heatmap_render.h"

namespace tailcause::cli {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void write_png(const core::Raster& r, const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw std::runtime_error(fmt::format("cannot write {}: {}", path, strerror(errno)));
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("libpng: out of memory");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error(fmt::format("cannot write {}: libpng failed", path));
  }
  png_init_io(png, file.get());
  png_set_IHDR(png, info, r.width, r.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < r.height; ++y)
    png_write_row(png, const_cast<png_bytep>(&r.rgb[static_cast<size_t>(y) * r.width * 3]));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

}  // namespace

int write_heatmap(const HeatmapOptions& options) {
  // --metric and --out were checked by their validators (heatmap_metric, file_suffix).
  const std::string path = core::heatmap_api_path(options.metric);
  const bool png = ends_with(options.out, ".png");
  // The font before the request: without one there is no PNG to write.
  std::optional<FontPainter> painter;
  if (png) {
    const FontFile font = options.font.empty() ? find_sans_serif_font() : FontFile{options.font, 0};
    painter.emplace(font.path, font.index);
  }
  ApiClient api(options.url);
  const core::HeatmapGrid grid = core::heatmap_grid(options.metric, api.get(path));
  if (painter) {
    write_png(core::render_heatmap_raster(grid, *painter), options.out);
  } else {
    std::ofstream out(options.out, std::ios::binary | std::ios::trunc);
    out << core::render_heatmap_svg(grid);
    if (!out.flush()) throw std::runtime_error(fmt::format("cannot write {}", options.out));
  }
  fmt::print(stderr, "{}: {} cells{}\n", options.out, grid.cells.size(),
             grid.cells.empty() ? " (no data in the range yet)" : "");
  return 0;
}

}  // namespace tailcause::cli
