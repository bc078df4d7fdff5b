// SPDX-License-Identifier: Apache-2.0
// Where a recipe file named in the configuration lives: an absolute path as written; a relative
// one next to the configuration file first (a user's own or edited copy), then in the installed
// recipe directory (/usr/share/tailcause/recipes), so `recipe_files: [llama_cpp.yaml]` works from
// /etc/tailcause/tailcause.yaml and `recipes/llama_cpp.yaml` from the source tree's deploy/.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tailcause::core {

// The recipe directory of an installation whose executable is `exe`: <prefix>/bin/tailcause
// -> <prefix>/share/tailcause/recipes (so the installed tree is relocatable).
std::string installed_recipe_dir(std::string_view exe);

// `written`: the path as in the file; `config_source`: the configuration file's path (its
// directory is the base); `exists`: whether a candidate is there. When neither candidate exists
// the one next to the configuration is returned, so the error that follows names that path.
std::string resolve_recipe_file(std::string_view written, std::string_view config_source,
                                std::string_view install_dir,
                                const std::function<bool(const std::string&)>& exists);

// The same, with the running executable's installed directory and the file system.
std::string resolve_recipe_file(std::string_view written, std::string_view config_source);

}  // namespace tailcause::core
