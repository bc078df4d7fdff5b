// SPDX-License-Identifier: Apache-2.0
// libFuzzer: configuration text (parse_config, parse_recipe_file). Every input must give a
// Config or a ConfigError, within the fuzzer's time and memory limits (the ctest sets
// -rss_limit_mb and -malloc_limit_mb: yaml-cpp's unbounded LoadAll on "," shows up as an OOM).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto config = tailcause::core::parse_config(text, "fuzz.yaml");
    // What the daemon does next with an accepted file.
    tailcause::core::parse_listen(config.listen);
    if (!config.otlp.endpoint.empty()) tailcause::core::parse_otlp_endpoint(config.otlp.endpoint);
  } catch (const tailcause::core::ConfigError&) {
  }
  try {
    tailcause::core::parse_recipe_file(text, "fuzz-recipes.yaml");
  } catch (const tailcause::core::ConfigError&) {
  }
  return 0;
}
