// SPDX-License-Identifier: Apache-2.0
#include "probes/exec_mappings.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <unordered_set>

#include "core/host/proc_self.h"
#include "probes/handles.h"

namespace tailcause::probes {
namespace {

// /proc/PID/stat in one read(2); empty when the process is gone. Not through a stream: a
// process that exits between the open and the read fails the read with ESRCH, which
// libstdc++'s filebuf throws as an exception (it stopped the daemon in the churn test).
std::string read_proc_stat(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  char buf[4096];  // one line: 52 numbers and a comm of 16 bytes at most
  const ssize_t n = read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<MapsEntry> read_exec_files(pid_t pid) {
  std::vector<MapsEntry> files;
  std::set<BinaryId> seen;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto entry = parse_maps_line(line);
    if (entry && seen.insert(entry->id).second) files.push_back(std::move(*entry));
  }
  return files;
}

}  // namespace

const std::vector<MapsEntry>& ExecMappings::of(pid_t pid, bool fresh) {
  static const std::vector<MapsEntry> kNone;
  const auto now = Clock::now();
  auto it = procs_.find(pid);
  if (feed_ && !fresh && it != procs_.end() && now - it->second.looked_at < kQuiet) {
    auto c = changed_.find(pid);
    if (c != changed_.end() && now >= c->second) {
      changed_.erase(c);
      c = changed_.end();
    }
    if (c == changed_.end()) {
      ++skips_;
      return it->second.files;
    }
  }
  ++looks_;
  const auto stat = core::parse_proc_stat(read_proc_stat(pid));
  if (!stat) {  // gone, or not ours to read
    procs_.erase(pid);
    changed_.erase(pid);
    return kNone;
  }
  const auto unchanged = [&](const Process& p) {
    if (p.start_ticks != stat->starttime_ticks) return false;  // another process, same pid
    const auto age = now - p.read_at;
    return age < kSamePass ||
           (p.vsize == stat->vsize_bytes && age < (feed_ ? kRefreshFed : kRefresh));
  };
  if (!fresh && it != procs_.end() && unchanged(it->second)) {
    ++skips_;
    it->second.looked_at = now;
    return it->second.files;
  }
  ++reads_;
  Process& p = procs_[pid];
  p = Process{stat->starttime_ticks, stat->vsize_bytes, now, now, read_exec_files(pid)};
  return p.files;
}

void ExecMappings::keep_only(const std::vector<pid_t>& pids) {
  const std::unordered_set<pid_t> live(pids.begin(), pids.end());
  std::erase_if(procs_, [&](const auto& kv) { return !live.count(kv.first); });
  std::erase_if(changed_, [&](const auto& kv) { return !live.count(kv.first); });
}

std::vector<pid_t> ExecMappings::scan_list(bool& listed) {
  const auto now = Clock::now();
  listed = !feed_ || now - listed_at_ >= kListEvery;
  if (listed) {
    listed_at_ = now;
    return all_pids();
  }
  std::vector<pid_t> pids;
  pids.reserve(procs_.size() + changed_.size());
  for (const auto& [pid, p] : procs_) pids.push_back(pid);
  for (const auto& [pid, until] : changed_) {
    if (!procs_.count(pid)) pids.push_back(pid);
  }
  return pids;
}

void ExecMappings::changed(pid_t pid) { changed_[pid] = Clock::now() + kReported; }

void ExecMappings::all_changed() {
  for (auto& [pid, p] : procs_) p.looked_at = {};
}

}  // namespace tailcause::probes
