// SPDX-License-Identifier: Apache-2.0
// The PNG heatmap's text: glyphs from one font file rendered by FreeType, anti-aliased and
// blended over the raster (core/heatmap_render decides what goes where).
#pragma once

#include <memory>
#include <string>

#include "core/report/heatmap_render.h"

// FreeType's handle types, so that its headers stay out of this one.
struct FT_LibraryRec_;
struct FT_FaceRec_;

namespace tailcause::cli {

class FontPainter final : public core::TextPainter {
 public:
  // Throws std::runtime_error naming the file when FreeType cannot load it as a scalable font.
  explicit FontPainter(const std::string& font_file, int face_index = 0);
  int width(std::string_view text, int px) const override;
  void draw(core::Raster& r, int x, int baseline_y, std::string_view text, int px,
            uint32_t rgb) const override;

 private:
  struct LibraryDone {
    void operator()(FT_LibraryRec_* library) const;
  };
  struct FaceDone {
    void operator()(FT_FaceRec_* face) const;
  };
  // In this order: the face is released before the library it came from.
  std::unique_ptr<FT_LibraryRec_, LibraryDone> library_;
  std::unique_ptr<FT_FaceRec_, FaceDone> face_;  // sized per call: one painter per thread
};

}  // namespace tailcause::cli
