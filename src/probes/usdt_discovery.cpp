// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_discovery.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sstream>

#include <spdlog/spdlog.h>

#include "probes/exec_mappings.h"

namespace tailcause::probes {
namespace {

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return pids;
}

std::set<std::string> tailcause_probes_in(const std::string& path) {
  std::set<std::string> probes;
  for (const auto& site : read_usdt_sites(path, kUsdtProvider).sites) probes.insert(site.name);
  return probes;
}

std::optional<MapsEntry> parse_maps_line(const std::string& line) {
  // start-end perms offset major:minor inode path. Most areas are not executable: those are
  // dropped before the line is split (a large process has thousands).
  const auto space = line.find(' ');
  if (space == std::string::npos || space + 3 >= line.size() || line[space + 3] != 'x') {
    return std::nullopt;
  }
  std::istringstream in(line);
  std::string range, perms, offset, dev, path;
  uint64_t inode = 0;
  if (!(in >> range >> perms >> offset >> dev >> inode)) return std::nullopt;
  if (perms.size() < 3 || perms[2] != 'x' || inode == 0) return std::nullopt;
  std::getline(in >> std::ws, path);
  if (path.empty() || path.front() != '/') return std::nullopt;
  if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) {
    return std::nullopt;  // replaced on disk: its path names another file now
  }
  unsigned major = 0, minor = 0;
  if (sscanf(dev.c_str(), "%x:%x", &major, &minor) != 2) return std::nullopt;
  return MapsEntry{{makedev(major, minor), inode}, path};
}

const UsdtDiscovery::Cached* UsdtDiscovery::examine(pid_t pid, const MapsEntry& entry) {
  // A file seen lately is taken as it was: a process maps hundreds of files, and one stat()
  // each per scan was most of the scan's cost. A file rebuilt in place shows within kRefresh.
  const auto now = std::chrono::steady_clock::now();
  if (auto it = cache_.find(entry.id);
      it != cache_.end() && now - it->second.checked_at < ExecMappings::kRefresh) {
    return &it->second;
  }
  // The same file from here: the plain path when it is the same inode (same mount namespace),
  // else through the process's root.
  std::string path = entry.path;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || st.st_ino != entry.id.inode) {
    path = "/proc/" + std::to_string(pid) + "/root" + entry.path;
    if (stat(path.c_str(), &st) != 0) return nullptr;
  }
  auto it = cache_.find(entry.id);
  if (it != cache_.end() && it->second.mtime_ns == mtime_ns(st)) {
    if (it->second.path != path && access(it->second.path.c_str(), R_OK) != 0) {
      it->second.path = path;  // the process that showed us the file is gone
    }
    it->second.checked_at = now;
    return &it->second;
  }
  auto sites = std::make_shared<UsdtSites>(read_usdt_sites(path, kUsdtProvider));
  for (const auto& p : sites->problems) spdlog::warn("attrib: {}: {}", path, p);
  sites->problems.clear();
  Cached c{mtime_ns(st), path, {}, {}, now};
  for (const auto& site : sites->sites) c.probes.insert(site.name);
  if (!c.probes.empty()) {
    spdlog::debug("attrib: {} carries {} tailcause probe(s)", path, c.probes.size());
    c.sites = std::move(sites);
  }
  return &(cache_[entry.id] = std::move(c));
}

void UsdtDiscovery::scan_into(pid_t pid, bool fresh, std::map<BinaryId, MappedBinary>& found,
                              std::set<BinaryId>& seen) {
  for (const MapsEntry& entry : maps_.of(pid, fresh)) {
    seen.insert(entry.id);
    const Cached* c = examine(pid, entry);
    if (!c || c->probes.empty()) continue;
    MappedBinary& b = found[entry.id];
    if (b.path.empty()) b = MappedBinary{entry.id, c->path, c->probes, c->sites, {}};
    b.pids.insert(pid);
  }
}

std::vector<MappedBinary> UsdtDiscovery::scan_process(pid_t pid, bool fresh) {
  std::map<BinaryId, MappedBinary> found;
  std::set<BinaryId> seen;
  scan_into(pid, fresh, found, seen);
  std::vector<MappedBinary> out;
  for (auto& [id, b] : found) out.push_back(std::move(b));
  return out;
}

std::map<BinaryId, MappedBinary> UsdtDiscovery::scan_all() {
  std::map<BinaryId, MappedBinary> found;
  std::set<BinaryId> seen;
  bool listed = false;
  const std::vector<pid_t> pids = maps_.scan_list(listed);
  for (pid_t pid : pids) scan_into(pid, false, found, seen);
  if (listed) maps_.keep_only(pids);
  // Forget files no process maps any more, so the cache follows churn instead of growing.
  std::erase_if(cache_, [&](const auto& kv) { return !seen.count(kv.first); });
  return found;
}

}  // namespace tailcause::probes
