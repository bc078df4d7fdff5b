// SPDX-License-Identifier: Apache-2.0
#include "probes/cgroup_names.h"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <filesystem>
#include <fstream>
#include <linux/magic.h>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace tailcause::probes {
namespace {

bool is_cgroup2(const std::string& path) {
  struct statfs s {};
  return statfs(path.c_str(), &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

bool has_controller(const std::string& root, const std::string& controller) {
  std::ifstream in(root + "/cgroup.controllers");
  std::string c;
  while (in >> c) {
    if (c == controller) return true;
  }
  return false;
}

// The v2 mount: /sys/fs/cgroup itself on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones.
std::string find_v2_root() {
  for (const char* p : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (is_cgroup2(p)) return p;
  }
  return "";
}

// The v1 hierarchy carrying the cpu controller (named cpu, cpu,cpuacct or cpuacct,cpu).
std::string find_v1_cpu_root() {
  std::ifstream mounts("/proc/self/mounts");
  std::string line;
  while (std::getline(mounts, line)) {
    std::istringstream f(line);
    std::string dev, dir, type, opts;
    f >> dev >> dir >> type >> opts;
    if (type != "cgroup") continue;
    std::istringstream o(opts);
    std::string opt;
    while (std::getline(o, opt, ',')) {
      if (opt == "cpu") return dir;
    }
  }
  return "";
}

}  // namespace

std::string CgroupLayout::describe() const {
  return std::string(version == Version::V1 ? "cgroup v1 cpu controller" : "cgroup v2") + " at " +
         root + (has_cpu_stats ? "" : " (no cpu.stat: throttling not observable)");
}

CgroupLayout detect_cgroup_layout(const core::CgroupConfig& config) {
  CgroupLayout l;
  const std::string v2 = find_v2_root();
  const std::string v1 = find_v1_cpu_root();
  std::string want = config.version;
  if (want == "auto") {
    if (!v2.empty() && has_controller(v2, "cpu")) {
      want = "v2";
    } else if (!v1.empty()) {
      want = "v1";
    } else {
      want = "v2";
    }
  }
  if (want == "v1") {
    l.version = CgroupLayout::Version::V1;
    l.root = config.root != "auto" ? config.root : v1;
    if (l.root.empty())
      throw std::runtime_error("cgroup v1 requested but no v1 cpu controller is mounted");
    l.has_cpu_stats = fs::exists(l.root + "/cpu.cfs_quota_us") || fs::exists(l.root + "/cpu.stat");
  } else {
    l.version = CgroupLayout::Version::V2;
    l.root = config.root != "auto" ? config.root : v2;
    if (l.root.empty()) throw std::runtime_error("no cgroup v2 hierarchy is mounted");
    if (!is_cgroup2(l.root)) throw std::runtime_error(l.root + " is not a cgroup v2 mount");
    l.has_cpu_stats = has_controller(l.root, "cpu");
  }
  if (!fs::is_directory(l.root))
    throw std::runtime_error("cgroup root " + l.root + " is not a directory");
  return l;
}

CgroupNames::CgroupNames(CgroupLayout layout) : layout_(std::move(layout)) {
  std::lock_guard lock(mu_);
  rescan();
}

void CgroupNames::rescan() {
  last_scan_ = std::chrono::steady_clock::now();
  names_.clear();
  struct stat st {};
  if (stat(layout_.root.c_str(), &st) == 0) names_[st.st_ino] = "/";
  std::error_code ec;
  for (fs::recursive_directory_iterator
           it(layout_.root, fs::directory_options::skip_permission_denied, ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory(ec)) continue;
    if (stat(it->path().c_str(), &st) != 0) continue;
    names_[st.st_ino] = "/" + fs::relative(it->path(), layout_.root, ec).string();
  }
}

std::string CgroupNames::name(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = names_.find(id);
  if (it != names_.end()) return it->second;
  if (std::chrono::steady_clock::now() - last_scan_ > std::chrono::seconds(1)) {
    rescan();
    it = names_.find(id);
    if (it != names_.end()) return it->second;
  }
  return "id:" + std::to_string(id);
}

std::vector<std::pair<uint64_t, std::string>> CgroupNames::all() {
  std::lock_guard lock(mu_);
  rescan();
  return {names_.begin(), names_.end()};
}

std::string CgroupNames::directory(const std::string& name) const {
  return name == "/" ? layout_.root : layout_.root + name;
}

}  // namespace tailcause::probes
