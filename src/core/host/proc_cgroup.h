// SPDX-License-Identifier: Apache-2.0
// Parses /proc/PID/cgroup: which memory cgroup a process is in. Pure: the caller reads the file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tailcause::core {

// The path of the memory controller's cgroup: the v1 line naming "memory" among its
// controllers ("4:memory:/agents/ta"), else the v2 line ("0::/agents/ta"); nullopt when there
// is neither or the path is not absolute.
std::optional<std::string> memory_cgroup_of(std::string_view proc_cgroup);

// "/a/b" -> "/a", "/a" -> "/", "/" -> nullopt.
std::optional<std::string> parent_cgroup(const std::string& path);

}  // namespace tailcause::core
