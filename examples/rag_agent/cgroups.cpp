// SPDX-License-Identifier: Apache-2.0
#include "cgroups.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rag {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes with one write(2) so the kernel's error (EINVAL, EACCES, ...) is what we report.
void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "we");
  if (!f) throw std::runtime_error(fmt::format("open {}: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fflush(f) == 0) && ok;
  int err = errno;
  std::fclose(f);
  if (!ok)
    throw std::runtime_error(fmt::format("write '{}' to {}: {}", text, path, std::strerror(err)));
}

// mkdir that accepts a directory already there (a leaf added twice, a pid's stale directory).
void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error(fmt::format("mkdir {}: {}", path, std::strerror(errno)));
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// The mounted cgroup hierarchies: v2 ones, and v1 ones with their controllers (mount options).
struct CgroupMount {
  std::string path;
  bool v2 = false;
  std::string options;
};

std::vector<CgroupMount> cgroup_mounts() {
  std::vector<CgroupMount> out;
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, path, type, opts, line;
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    in >> dev >> path >> type >> opts;
    if (type == "cgroup2" || type == "cgroup") out.push_back({path, type == "cgroup2", opts});
  }
  return out;
}

// The v1 hierarchy that carries `controller`; "" if none is mounted.
std::string v1_root(const std::vector<CgroupMount>& mounts, const std::string& controller) {
  for (const auto& m : mounts) {
    std::istringstream o(m.options);
    std::string opt;
    while (!m.v2 && std::getline(o, opt, ','))
      if (opt == controller) return m.path;
  }
  return "";
}

// Finds the hierarchy with the cpu controller: v2 (if its root offers cpu), else v1 "cpu".
std::pair<CgroupMode, std::string> detect_root() {
  const auto mounts = cgroup_mounts();
  for (const auto& m : mounts)
    if (m.v2 && has_word(read_text(m.path + "/cgroup.controllers"), "cpu"))
      return {CgroupMode::V2, m.path};
  if (auto v1 = v1_root(mounts, "cpu"); !v1.empty()) return {CgroupMode::V1, v1};
  return {CgroupMode::None, ""};
}

// "MAJ:MIN" of the disk that holds `file`, as the I/O controllers want it: a partition's
// parent disk.
std::string disk_of(const std::string& file) {
  struct stat st;
  if (::stat(file.c_str(), &st) != 0)
    throw std::runtime_error(fmt::format("stat {}: {}", file, std::strerror(errno)));
  const std::string dev = fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
  const std::string sys = "/sys/dev/block/" + dev;
  if (!exists(sys))
    throw std::runtime_error(fmt::format("{} is on no block device (device {})", file, dev));
  if (!exists(sys + "/partition")) return dev;
  std::istringstream parent(read_text(sys + "/../dev"));  // the link's target's parent
  std::string disk;
  parent >> disk;
  return disk;
}

// Directories left by agents that were killed with SIGKILL: remove the empty ones.
void remove_stale_dirs(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    int pid = 0;
    if (std::sscanf(e->d_name, "tailcause-agent-%d", &pid) != 1 || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::string dir = root + "/" + e->d_name;
    if (DIR* sub = ::opendir(dir.c_str())) {
      while (dirent* s = ::readdir(sub))
        if (s->d_type == DT_DIR && s->d_name[0] != '.') ::rmdir((dir + "/" + s->d_name).c_str());
      ::closedir(sub);
    }
    if (::rmdir(dir.c_str()) == 0) spdlog::info("removed stale cgroup {}", dir);
  }
  ::closedir(d);
}

// Kills what is left in a cgroup (only our own children can be there) and removes it; a cgroup
// whose last task is still exiting answers EBUSY for a moment, hence the retries.
void kill_and_rmdir(const std::string& dir) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) break;
    std::istringstream procs(read_text(dir + "/cgroup.procs"));
    pid_t pid;
    while (procs >> pid) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  spdlog::warn("could not remove cgroup {}: {}", dir, std::strerror(errno));
}

}  // namespace

const char* cgroup_mode_name(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::V1: return "v1";
    case CgroupMode::V2: return "v2";
    case CgroupMode::None: return "none";
  }
  return "none";
}

CgroupTree::CgroupTree(const std::string& root_override) {
  if (!root_override.empty()) {
    if (exists(root_override + "/cgroup.controllers")) {
      if (!has_word(read_text(root_override + "/cgroup.controllers"), "cpu"))
        throw std::invalid_argument(fmt::format(
            "--cgroup-root {}: this cgroup v2 directory does not offer the cpu controller",
            root_override));
      mode_ = CgroupMode::V2;
    } else if (exists(root_override + "/cpu.cfs_quota_us")) {
      mode_ = CgroupMode::V1;
    } else {
      throw std::invalid_argument(fmt::format(
          "--cgroup-root {}: not a cgroup directory with the cpu controller", root_override));
    }
    root_ = root_override;
  } else {
    std::tie(mode_, root_) = detect_root();
    if (mode_ == CgroupMode::None) {
      reason_ = "no cgroup hierarchy with the cpu controller is mounted";
      return;
    }
  }
  try {
    remove_stale_dirs(root_);
    if (mode_ == CgroupMode::V2 && !has_word(read_text(root_ + "/cgroup.subtree_control"), "cpu"))
      write_text(root_ + "/cgroup.subtree_control", "+cpu");
    dir_ = fmt::format("{}/tailcause-agent-{}", root_, ::getpid());
    make_dir(dir_);
    if (mode_ == CgroupMode::V2) write_text(dir_ + "/cgroup.subtree_control", "+cpu");
  } catch (const std::exception& e) {
    reason_ = e.what();
    if (!dir_.empty()) ::rmdir(dir_.c_str());
    dir_.clear();
    mode_ = CgroupMode::None;
  }
}

CgroupTree::~CgroupTree() { remove(); }

std::string CgroupTree::add_leaf(const std::string& name) {
  if (mode_ == CgroupMode::None) return "";
  std::string leaf = dir_ + "/" + name;
  make_dir(leaf);
  leaves_.push_back(leaf);
  return leaf;
}

void CgroupTree::set_cpu_quota(const std::string& leaf, long quota_us, long period_us) const {
  if (mode_ == CgroupMode::V1) {
    write_text(leaf + "/cpu.cfs_period_us", std::to_string(period_us));
    write_text(leaf + "/cpu.cfs_quota_us", std::to_string(quota_us));
  } else if (mode_ == CgroupMode::V2) {
    write_text(leaf + "/cpu.max", fmt::format("{} {}", quota_us, period_us));
  } else {
    throw std::runtime_error("no cgroup to put a CPU quota on");
  }
}

void CgroupTree::set_cpu_weight(const std::string& leaf, long v1_shares, long v2_weight) const {
  if (mode_ == CgroupMode::V1) {
    write_text(leaf + "/cpu.shares", std::to_string(v1_shares));
  } else if (mode_ == CgroupMode::V2) {
    write_text(leaf + "/cpu.weight", std::to_string(v2_weight));
  } else {
    throw std::runtime_error("no cgroup to set a CPU weight on");
  }
}

std::string CgroupTree::add_io_leaf(const std::string& name) {
  try {
    if (mode_ == CgroupMode::V2) {
      if (!has_word(read_text(root_ + "/cgroup.controllers"), "io"))
        throw std::runtime_error(fmt::format("{} does not offer the io controller", root_));
      for (const auto& d : {root_, dir_})
        if (!has_word(read_text(d + "/cgroup.subtree_control"), "io"))
          write_text(d + "/cgroup.subtree_control", "+io");
      const std::string leaf = dir_ + "/" + name;
      return std::find(leaves_.begin(), leaves_.end(), leaf) != leaves_.end() ? leaf
                                                                              : add_leaf(name);
    }
    if (mode_ == CgroupMode::None) throw std::runtime_error(reason_);
    const std::string blkio = v1_root(cgroup_mounts(), "blkio");
    if (blkio.empty()) throw std::runtime_error("no v1 blkio hierarchy is mounted");
    if (io_dir_.empty()) {
      remove_stale_dirs(blkio);
      const std::string dir = fmt::format("{}/tailcause-agent-{}", blkio, ::getpid());
      make_dir(dir);
      io_dir_ = dir;
    }
    const std::string leaf = io_dir_ + "/" + name;
    make_dir(leaf);
    leaves_.push_back(leaf);
    return leaf;
  } catch (const std::exception& e) {
    io_reason_ = e.what();
    return "";
  }
}

void CgroupTree::set_read_iops(const std::string& io_leaf, const std::string& file,
                               long iops) const {
  const std::string disk = disk_of(file);
  if (mode_ == CgroupMode::V2)
    write_text(io_leaf + "/io.max", fmt::format("{} riops={}", disk, iops));
  else
    write_text(io_leaf + "/blkio.throttle.read_iops_device", fmt::format("{} {}", disk, iops));
}

CpuThrottle CgroupTree::read_throttle(const std::string& leaf) const {
  CpuThrottle t;
  if (leaf.empty()) return t;
  std::istringstream in(read_text(leaf + "/cpu.stat"));
  std::string key;
  uint64_t value;
  while (in >> key >> value) {
    if (key == "nr_periods")
      t.periods = value;
    else if (key == "nr_throttled")
      t.throttled_periods = value;
    else if (key == "throttled_time")
      t.throttled_seconds = value / 1e9;  // v1: ns
    else if (key == "throttled_usec")
      t.throttled_seconds = value / 1e6;  // v2: us
  }
  return t;
}

void CgroupTree::remove() {
  for (auto it = leaves_.rbegin(); it != leaves_.rend(); ++it) kill_and_rmdir(*it);
  leaves_.clear();
  for (auto* dir : {&dir_, &io_dir_}) {
    if (!dir->empty()) kill_and_rmdir(*dir);
    dir->clear();
  }
}

void CgroupTree::join(const std::string& leaf) {
  if (!leaf.empty()) write_text(leaf + "/cgroup.procs", std::to_string(::getpid()));
}

}  // namespace rag
