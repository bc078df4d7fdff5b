// SPDX-License-Identifier: Apache-2.0
// Internal to the configuration parser: turns untrusted YAML text into one yaml-cpp document
// within fixed limits. The daemon runs as root and reads this text on every SIGHUP, so a file
// that would make the parser recurse or allocate without bound is refused before yaml-cpp sees it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace tailcause::core {

// Limits on a configuration or recipe file.
inline constexpr size_t kMaxConfigBytes = 1024 * 1024;  // the shipped file is ~8 KB
inline constexpr size_t kMaxYamlDepth = 32;             // nested mappings and sequences
inline constexpr size_t kMaxYamlEvents = 200000;        // nodes, keys and structure

// The single document of `text`, or a null node when it has none. Refuses text over the
// limits, invalid YAML and a second non-empty document, with ConfigError naming `source` and
// the line. libyaml (the reference C parser) checks the text first: yaml-cpp 0.7 alone loops
// without bound on a stray ',' at document level (LoadAll yields empty documents forever).
YAML::Node load_yaml_document(std::string_view text, std::string_view source);

}  // namespace tailcause::core
