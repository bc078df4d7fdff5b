// SPDX-License-Identifier: Apache-2.0
#include "cli/font_lookup.h"

#include <fontconfig/fontconfig.h>

#include <memory>
#include <stdexcept>

namespace tailcause::cli {
namespace {

struct ConfigDestroy {
  void operator()(FcConfig* c) const { FcConfigDestroy(c); }
};
struct PatternDestroy {
  void operator()(FcPattern* p) const { FcPatternDestroy(p); }
};
using Pattern = std::unique_ptr<FcPattern, PatternDestroy>;

[[noreturn]] void no_font() {
  throw std::runtime_error("no sans-serif font found (install fonts-dejavu-core) — or write .svg");
}

}  // namespace

FontFile find_sans_serif_font() {
  // A configuration of our own (FONTCONFIG_FILE is honoured), freed here, rather than
  // fontconfig's process-wide one that lives until exit.
  std::unique_ptr<FcConfig, ConfigDestroy> config(FcInitLoadConfigAndFonts());
  Pattern pattern(FcNameParse(reinterpret_cast<const FcChar8*>("sans-serif")));
  if (!config || !pattern) no_font();
  // FreeType must size it to 10 and 13 pixels: a bitmap-only font will not do.
  FcPatternAddBool(pattern.get(), FC_SCALABLE, FcTrue);
  FcConfigSubstitute(config.get(), pattern.get(), FcMatchPattern);
  FcDefaultSubstitute(pattern.get());
  FcResult result = FcResultNoMatch;
  const Pattern match(FcFontMatch(config.get(), pattern.get(), &result));
  FcChar8* file = nullptr;
  FcBool scalable = FcFalse;
  if (!match || FcPatternGetString(match.get(), FC_FILE, 0, &file) != FcResultMatch ||
      FcPatternGetBool(match.get(), FC_SCALABLE, 0, &scalable) != FcResultMatch || !scalable)
    no_font();
  FontFile font{reinterpret_cast<const char*>(file), 0};
  FcPatternGetInteger(match.get(), FC_INDEX, 0, &font.index);
  return font;
}

}  // namespace tailcause::cli
