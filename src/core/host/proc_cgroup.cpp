// SPDX-License-Identifier: Apache-2.0
#include "core/host/proc_cgroup.h"

namespace tailcause::core {

std::optional<std::string> memory_cgroup_of(std::string_view text) {
  std::optional<std::string> v2;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    // hierarchy-id:controller-list:path (the path itself may hold ':').
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (path.empty() || path.front() != '/') continue;
    if (controllers.empty()) {
      if (line.substr(0, a) == "0") v2 = std::string(path);
      continue;
    }
    for (std::string_view rest = controllers; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (rest.substr(0, comma) == "memory") return std::string(path);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return v2;
}

std::optional<std::string> parent_cgroup(const std::string& path) {
  if (path.size() <= 1) return std::nullopt;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace tailcause::core
