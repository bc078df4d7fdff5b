// SPDX-License-Identifier: Apache-2.0
// Which cgroup hierarchy tells tenants apart on this host, and the names of its cgroups.
//
// BPF programs report a cgroup by the kernfs id of its directory, which is the directory's
// inode number in that hierarchy; this class maps ids back to paths ("/agents/t-1") by
// walking the hierarchy, and rescans (rate-limited) when it meets an id it does not know.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config/config.h"

namespace tailcause::probes {

struct CgroupLayout {
  // v1: the v1 cpu controller's hierarchy (hybrid hosts); v2: the unified hierarchy.
  enum class Version { V1, V2 } version = Version::V2;
  std::string root;            // mount point whose directories BPF ids refer to
  bool has_cpu_stats = false;  // cpu.stat (throttling) is available under root
  std::string describe() const;
};

// auto: v2 when the unified hierarchy has the cpu controller, else the v1 cpu hierarchy when
// mounted, else v2 without CPU statistics. An explicit version or root is honoured or refused
// with a clear reason (throws std::runtime_error).
CgroupLayout detect_cgroup_layout(const core::CgroupConfig& config);

// Thread-safe: families may resolve names while others start in parallel.
class CgroupNames {
 public:
  explicit CgroupNames(CgroupLayout layout);

  const CgroupLayout& layout() const { return layout_; }

  // "/" for the root, "/a/b" below it; "id:<n>" for an id not found after a rescan.
  std::string name(uint64_t id);
  // Every cgroup directory below the root, as (id, name); rescans first.
  std::vector<std::pair<uint64_t, std::string>> all();
  // Absolute directory of a cgroup name ("/a" -> "<root>/a").
  std::string directory(const std::string& name) const;

 private:
  void rescan();  // callers hold mu_
  CgroupLayout layout_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::string> names_;
  std::chrono::steady_clock::time_point last_scan_{};
};

}  // namespace tailcause::probes
