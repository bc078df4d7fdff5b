// SPDX-License-Identifier: Apache-2.0
#include "core/host/recipe_match.h"

#include <algorithm>
#include <cctype>

namespace tailcause::core {

namespace {
char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
}  // namespace

std::string recipe_runtime(std::string_view library) {
  const auto slash = library.rfind('/');
  std::string_view name = slash == std::string_view::npos ? library : library.substr(slash + 1);
  if (name.substr(0, 3) == "lib") name.remove_prefix(3);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  const auto end = name.find_first_of("*?[.");
  if (end != std::string_view::npos) name = name.substr(0, end);
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out.size() < 3 ? std::string() : out;
}

bool looks_like(std::string_view runtime, std::string_view path) {
  if (runtime.empty()) return false;
  const auto slash = path.rfind('/');
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::transform(name.begin(), name.end(), name.begin(), lower);
  return name.find(runtime) != std::string::npos;
}

const char* recipe_state_name(RecipeState s) {
  switch (s) {
    case RecipeState::attached: return "attached";
    case RecipeState::symbol_missing: return "symbol_missing";
    case RecipeState::library_mismatch: return "library_mismatch";
    case RecipeState::library_unmapped: return "library_unmapped";
  }
  return "library_unmapped";
}

}  // namespace tailcause::core
