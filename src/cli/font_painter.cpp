// SPDX-License-Identifier: Apache-2.0
#include "cli/font_painter.h"

#include <fmt/format.h>
#include <ft2build.h>
#include FT_FREETYPE_H

#include <stdexcept>

#include "core/record/utf8.h"

namespace tailcause::cli {
namespace {

// The next code point of UTF-8 `s` from `at` (advanced past it); U+FFFD for a bad sequence
// (core::decode_utf8: overlongs and surrogates included), so that a stray byte shows as one box
// rather than ending the label.
char32_t next_code_point(std::string_view s, size_t& at) {
  const core::Utf8Char c = core::decode_utf8(s, at);
  at += c.length;
  return c.code_point;
}

void blend(core::Raster& r, int left, int top, const FT_Bitmap& bitmap, uint32_t rgb) {
  if (bitmap.pixel_mode != FT_PIXEL_MODE_GRAY) return;  // what FT_LOAD_RENDER makes
  const unsigned ink[3] = {rgb >> 16 & 0xff, rgb >> 8 & 0xff, rgb & 0xff};
  for (int row = 0; row < static_cast<int>(bitmap.rows); ++row) {
    const int y = top + row;
    if (y < 0 || y >= r.height) continue;
    for (int col = 0; col < static_cast<int>(bitmap.width); ++col) {
      const int x = left + col;
      if (x < 0 || x >= r.width) continue;
      const unsigned a = bitmap.buffer[row * bitmap.pitch + col];  // coverage, 0..255
      uint8_t* p = &r.rgb[(static_cast<size_t>(y) * r.width + x) * 3];
      for (int c = 0; c < 3; ++c)
        p[c] = static_cast<uint8_t>((ink[c] * a + p[c] * (255 - a) + 127) / 255);
    }
  }
}

}  // namespace

void FontPainter::LibraryDone::operator()(FT_LibraryRec_* library) const {
  FT_Done_FreeType(library);
}
void FontPainter::FaceDone::operator()(FT_FaceRec_* face) const { FT_Done_Face(face); }

FontPainter::FontPainter(const std::string& font_file, int face_index) {
  FT_Library library = nullptr;
  if (FT_Init_FreeType(&library) != 0) throw std::runtime_error("FreeType failed to start");
  library_.reset(library);
  FT_Face face = nullptr;
  const FT_Error error = FT_New_Face(library, font_file.c_str(), face_index, &face);
  if (error != 0) {
    throw std::runtime_error(fmt::format("cannot load font {}: {}", font_file,
                                         error == FT_Err_Unknown_File_Format
                                             ? "not a font file"
                                             : fmt::format("FreeType error {}", error)));
  }
  face_.reset(face);
  if (!FT_IS_SCALABLE(face))
    throw std::runtime_error(fmt::format("cannot use font {}: not scalable", font_file));
}

int FontPainter::width(std::string_view text, int px) const {
  FT_Set_Pixel_Sizes(face_.get(), 0, static_cast<FT_UInt>(px));
  long advance = 0;  // 26.6 fixed point, as FreeType counts
  for (size_t at = 0; at < text.size();) {
    if (FT_Load_Char(face_.get(), next_code_point(text, at), FT_LOAD_DEFAULT) == 0)
      advance += face_->glyph->advance.x;
  }
  return static_cast<int>((advance + 63) >> 6);
}

void FontPainter::draw(core::Raster& r, int x, int baseline_y, std::string_view text, int px,
                       uint32_t rgb) const {
  FT_Set_Pixel_Sizes(face_.get(), 0, static_cast<FT_UInt>(px));
  long pen = 0;  // 26.6, from x
  for (size_t at = 0; at < text.size();) {
    if (FT_Load_Char(face_.get(), next_code_point(text, at), FT_LOAD_RENDER) != 0) continue;
    const FT_GlyphSlot glyph = face_->glyph;
    blend(r, x + static_cast<int>(pen >> 6) + glyph->bitmap_left, baseline_y - glyph->bitmap_top,
          glyph->bitmap, rgb);
    pen += glyph->advance.x;
  }
}

}  // namespace tailcause::cli
