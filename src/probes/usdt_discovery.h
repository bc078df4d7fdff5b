// SPDX-License-Identifier: Apache-2.0
// Finds the executables and shared libraries that carry tailcause USDT probes: the ELF note
// section .note.stapsdt with provider "tailcause", in the files running processes map.
// Results per file are cached by (device, inode, mtime), so rescanning /proc is cheap.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/usdt_notes.h"

namespace tailcause::probes {

// Every process id under /proc (processes come and go while it is read: callers cope).
std::vector<pid_t> all_pids();

inline constexpr const char* kUsdtProvider = "tailcause";

// A file as the kernel knows it (from /proc/<pid>/maps).
struct BinaryId {
  uint64_t dev = 0;  // makedev(major, minor)
  uint64_t inode = 0;
  auto operator<=>(const BinaryId&) const = default;
};

struct MappedBinary {
  BinaryId id;
  std::string path;              // a path to the same file from the daemon's mount namespace
  std::set<std::string> probes;  // tailcause probe names it carries
  std::shared_ptr<const UsdtSites> sites;  // the tailcause probe sites, where they are
  std::set<pid_t> pids;                    // processes mapping it (in this scan)
};

// The tailcause probe names in an ELF file's .note.stapsdt; empty when it has none, is not
// ELF, or cannot be read.
std::set<std::string> tailcause_probes_in(const std::string& path);

// One line of /proc/<pid>/maps that maps a file executable: its id and path.
struct MapsEntry {
  BinaryId id;
  std::string path;
};
std::optional<MapsEntry> parse_maps_line(const std::string& line);

class ExecMappings;

class UsdtDiscovery {
 public:
  explicit UsdtDiscovery(ExecMappings& maps) : maps_(maps) {}

  // Binaries with tailcause probes that `pid` maps (empty if it exited). `fresh`: read its
  // maps now (it just called exec), not from the last reading.
  std::vector<MappedBinary> scan_process(pid_t pid, bool fresh);
  // The same for every process.
  std::map<BinaryId, MappedBinary> scan_all();

 private:
  struct Cached {
    int64_t mtime_ns = 0;
    std::string path;
    std::set<std::string> probes;
    std::shared_ptr<const UsdtSites> sites;            // null when it has no tailcause probes
    std::chrono::steady_clock::time_point checked_at;  // last stat() of the file
  };
  // Probe names of the file behind a maps entry of `pid`, parsing it at most once per version.
  const Cached* examine(pid_t pid, const MapsEntry& entry);
  void scan_into(pid_t pid, bool fresh, std::map<BinaryId, MappedBinary>& found,
                 std::set<BinaryId>& seen);

  ExecMappings& maps_;
  std::map<BinaryId, Cached> cache_;
};

}  // namespace tailcause::probes
