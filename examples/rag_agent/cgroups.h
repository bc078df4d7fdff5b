// SPDX-License-Identifier: Apache-2.0
// The agent's own cgroups: <root>/tailcause-agent-<pid>/<leaf>, one leaf per tenant (plus
// _tools and _hog-<tenant>), in the hierarchy that has the cpu controller, so the kernel
// accounts, throttles and schedules each tenant separately. Removed when the tree is destroyed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rag {

enum class CgroupMode { V1, V2, None };

struct CpuThrottle {
  uint64_t periods = 0;
  uint64_t throttled_periods = 0;
  double throttled_seconds = 0;
};

class CgroupTree {
 public:
  // Creates the agent directory. With root_override empty, picks a cgroup v2 hierarchy with the
  // cpu controller, else the v1 cpu hierarchy. On failure (no root, read-only cgroupfs) the mode
  // is None and reason() says why; with a bad override it throws std::invalid_argument.
  explicit CgroupTree(const std::string& root_override);
  ~CgroupTree();
  CgroupTree(const CgroupTree&) = delete;
  CgroupTree& operator=(const CgroupTree&) = delete;

  CgroupMode mode() const { return mode_; }
  const std::string& reason() const { return reason_; }
  const std::string& dir() const { return dir_; }

  // Creates <dir>/<name> and returns its path; "" in mode None.
  std::string add_leaf(const std::string& name);
  // quota_us of CPU time per period_us (v1 cpu.cfs_quota_us, v2 cpu.max). Throws on failure.
  void set_cpu_quota(const std::string& leaf, long quota_us, long period_us) const;
  // CPU weight relative to siblings: v1 cpu.shares (default 1024), v2 cpu.weight (default
  // 100). Throws on failure.
  void set_cpu_weight(const std::string& leaf, long v1_shares, long v2_weight) const;
  // The leaf `name` in the hierarchy with the block I/O controller: the cpu leaf itself on v2
  // (with +io enabled on the way), <blkio root>/tailcause-agent-<pid>/<name> on v1. "" when
  // neither offers one (reason in io_reason()); a process joins it as it joins its cpu leaf.
  std::string add_io_leaf(const std::string& name);
  const std::string& io_reason() const { return io_reason_; }
  // At most `iops` reads a second from the disk that holds `file`, for the tasks in io_leaf
  // (v1 blkio.throttle.read_iops_device, v2 io.max riops). Throws on failure (a file on no
  // block device: tmpfs, overlay...).
  void set_read_iops(const std::string& io_leaf, const std::string& file, long iops) const;
  CpuThrottle read_throttle(const std::string& leaf) const;
  // Removes every leaf and the agent directory (killing strays first). Idempotent.
  void remove();

  // Moves the calling process into `leaf` (no-op for ""). For a freshly forked child, before it
  // starts threads, so that every thread it makes is accounted there. Throws on failure.
  static void join(const std::string& leaf);

 private:
  CgroupMode mode_ = CgroupMode::None;
  std::string root_, dir_, reason_;
  std::vector<std::string> leaves_;
  std::string io_dir_, io_reason_;  // v1 only: the agent's directory under the blkio root
};

const char* cgroup_mode_name(CgroupMode mode);

}  // namespace rag
