// SPDX-License-Identifier: Apache-2.0
// Which font file `tailcause heatmap` draws a PNG's labels with when --font does not say:
// fontconfig's match for "sans-serif", as a browser would pick for the SVG (DejaVu Sans on
// Debian, from fonts-dejavu-core).
#pragma once

#include <string>

namespace tailcause::cli {

struct FontFile {
  std::string path;
  int index = 0;  // the face within the file (a .ttc holds several)
};

// Throws std::runtime_error saying what to install when fontconfig knows no such font.
FontFile find_sans_serif_font();

}  // namespace tailcause::cli
