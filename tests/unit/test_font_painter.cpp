// SPDX-License-Identifier: Apache-2.0
// The PNG heatmap's text with the real font: fontconfig finds a sans-serif (fonts-dejavu-core,
// from scripts/install-deps.sh), FreeType draws anti-aliased ink of the asked colour, decodes
// UTF-8, clips at the edges; a missing font or a file that is no font is a clear error.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "cli/font_lookup.h"
#include "cli/font_painter.h"

namespace tailcause::cli {
namespace {

core::Raster blank(int width, int height, uint8_t value = 0xff) {
  return {width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, value)};
}

const uint8_t* at(const core::Raster& r, int x, int y) {
  return &r.rgb[(static_cast<size_t>(y) * r.width + x) * 3];
}

// The box around the pixels that are no longer white.
struct Ink {
  int dark = 0, grey = 0;  // luminance under 100; between, the anti-aliased edges
  int x0 = 1 << 20, y0 = 1 << 20, x1 = -1, y1 = -1;
  int w() const { return x1 - x0 + 1; }
  int h() const { return y1 - y0 + 1; }
};
Ink ink_of(const core::Raster& r) {
  Ink ink;
  for (int y = 0; y < r.height; ++y)
    for (int x = 0; x < r.width; ++x) {
      const uint8_t* p = at(r, x, y);
      const int lum = (299 * p[0] + 587 * p[1] + 114 * p[2]) / 1000;
      if (lum == 255) continue;
      (lum < 100 ? ink.dark : ink.grey) += 1;
      ink.x0 = std::min(ink.x0, x), ink.x1 = std::max(ink.x1, x);
      ink.y0 = std::min(ink.y0, y), ink.y1 = std::max(ink.y1, y);
    }
  return ink;
}

const FontPainter& system_painter() {
  static const FontFile font = find_sans_serif_font();
  static const FontPainter painter(font.path, font.index);
  return painter;
}

TEST(FontPainter, DrawsAntiAliasedInkAroundTheBaseline) {
  const FontPainter& painter = system_painter();
  core::Raster r = blank(200, 40);
  painter.draw(r, 10, 28, "Hg 12 ms", 16, 0x000000);
  const Ink ink = ink_of(r);
  EXPECT_GT(ink.dark, 40);
  EXPECT_GT(ink.grey, 10);  // edges blended, not a 1-bit mask
  EXPECT_GE(ink.x0, 10);
  EXPECT_LE(ink.x1, 10 + painter.width("Hg 12 ms", 16));
  EXPECT_LT(ink.y0, 28 - 8);  // "H" stands on the baseline ...
  EXPECT_GT(ink.y1, 28);      // ... "g" hangs below it
}

TEST(FontPainter, WidthGrowsWithTextAndSize) {
  const FontPainter& painter = system_painter();
  EXPECT_EQ(painter.width("", 10), 0);
  EXPECT_GT(painter.width("Hg", 10), 0);
  EXPECT_GT(painter.width("Hg 12 ms", 10), painter.width("Hg", 10));
  EXPECT_GT(painter.width("Hg 12 ms", 20), painter.width("Hg 12 ms", 10));
  // One glyph for a three-byte character, not three.
  EXPECT_LT(painter.width("\u2192", 10), painter.width("MMM", 10));
}

TEST(FontPainter, DecodesUtf8Arrows) {
  const FontPainter& painter = system_painter();
  core::Raster right = blank(40, 40), up = blank(40, 40);
  painter.draw(right, 5, 30, "\u2192", 24, 0x000000);
  painter.draw(up, 5, 30, "\u2191", 24, 0x000000);
  const Ink r = ink_of(right), u = ink_of(up);
  EXPECT_GT(r.w(), r.h() + 4);  // one horizontal arrow (three bytes as glyphs would be wide
  EXPECT_GT(u.h(), u.w() + 4);  // one vertical arrow   and short both times)
  // A broken sequence draws a replacement glyph and the rest of the text still follows.
  EXPECT_GT(painter.width("a\xe2z", 10), painter.width("az", 10));
}

TEST(FontPainter, DrawsOverlongAndSurrogateBytesAsReplacementGlyphs) {
  // The strict decoder (core/record/utf8.h): an overlong '/' (C0 AF) is two bad bytes, not a
  // slash, and a UTF-16 surrogate (ED A0 80) is three; each draws one U+FFFD.
  const FontPainter& painter = system_painter();
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(painter.width("a\xc0\xafz", 10), painter.width("a" + fffd + fffd + "z", 10));
  EXPECT_NE(painter.width("a\xc0\xafz", 10), painter.width("a/z", 10));
  EXPECT_EQ(painter.width("a\xed\xa0\x80z", 10), painter.width("a" + fffd + fffd + fffd + "z", 10));
}

TEST(FontPainter, BlendsTheColourOverTheBackground) {
  const FontPainter& painter = system_painter();
  core::Raster r = blank(100, 30, 0x40);  // dark grey
  painter.draw(r, 2, 20, "Hg", 18, 0xff0000);
  int red = 0, between = 0;
  for (size_t i = 0; i < r.rgb.size(); i += 3) {
    if (r.rgb[i] == 0xff && r.rgb[i + 1] == 0 && r.rgb[i + 2] == 0) ++red;
    if (r.rgb[i] > 0x40 && r.rgb[i] < 0xff) {
      ++between;
      EXPECT_EQ(r.rgb[i + 1], r.rgb[i + 2]);  // green and blue fade alike
      EXPECT_LT(r.rgb[i + 1], 0x40);
    }
  }
  EXPECT_GT(red, 20);
  EXPECT_GT(between, 10);
}

TEST(FontPainter, ClipsAtTheEdges) {
  const FontPainter& painter = system_painter();
  core::Raster r = blank(12, 8);
  painter.draw(r, -7, 6, "Hg 12 ms", 16, 0x000000);  // sanitizers would see a stray write
  painter.draw(r, 6, 30, "Hg", 16, 0x000000);
  EXPECT_GT(ink_of(r).dark, 0);
}

TEST(FontPainter, AFileThatIsNoFontIsAClearError) {
  const std::string path = testing::TempDir() + "tailcause_not_a_font.ttf";
  std::ofstream(path) << "not a font\n";
  try {
    FontPainter painter(path);
    FAIL() << "loaded " << path;
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot load font " + path + ": not a font file");
  }
  EXPECT_THROW(FontPainter("/nonexistent/font.ttf"), std::runtime_error);
  unlink(path.c_str());
}

TEST(FontLookup, FindsASansSerifFontFile) {
  const FontFile font = find_sans_serif_font();
  EXPECT_EQ(access(font.path.c_str(), R_OK), 0) << font.path;
  EXPECT_GE(font.index, 0);
}

TEST(FontLookup, NoFontsIsAClearError) {
  // A fontconfig configuration that names no font directory.
  const std::string conf = testing::TempDir() + "tailcause_no_fonts.conf";
  std::ofstream(conf) << "<?xml version=\"1.0\"?>\n<fontconfig></fontconfig>\n";
  const char* old = getenv("FONTCONFIG_FILE");
  const std::string saved = old ? old : "";
  setenv("FONTCONFIG_FILE", conf.c_str(), 1);
  try {
    find_sans_serif_font();
    ADD_FAILURE() << "found a font without font directories";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "no sans-serif font found (install fonts-dejavu-core) \u2014 or write .svg");
  }
  if (old)
    setenv("FONTCONFIG_FILE", saved.c_str(), 1);
  else
    unsetenv("FONTCONFIG_FILE");
  unlink(conf.c_str());
}

}  // namespace
}  // namespace tailcause::cli
