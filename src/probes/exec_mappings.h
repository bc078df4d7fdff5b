// SPDX-License-Identifier: Apache-2.0
// The files each process maps executable, from /proc/<pid>/maps, shared by the USDT discovery
// and the uprobe recipes. Reading the maps of a large process costs milliseconds (a process
// with PyTorch maps 1,700 areas) and holds its mmap lock meanwhile, so a process is read again
// only when it may have mapped something new: its virtual size changed (a library mapped or
// unmapped changes it), it is another program (exec, a reused pid), or its last reading is
// older than a bound that catches the improbable case of a mapping and an unmapping of the
// same size between two readings.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "probes/usdt_discovery.h"

namespace tailcause::probes {

class ExecMappings {
 public:
  using Clock = std::chrono::steady_clock;
  // A process is read again at least this often, changed or not.
  static constexpr auto kRefresh = std::chrono::seconds(10);
  // A reading this recent serves every caller (the discovery and the recipes scan together).
  static constexpr auto kSamePass = std::chrono::milliseconds(500);

  // The distinct files `pid` maps executable (empty when it exited or cannot be read). `fresh`
  // reads the maps whatever the stamp says (the process just called exec).
  const std::vector<MapsEntry>& of(pid_t pid, bool fresh = false);
  // Forgets processes not in `pids` (a full pass over /proc saw them gone).
  void keep_only(const std::vector<pid_t>& pids);

  uint64_t reads() const { return reads_; }  // maps files read
  uint64_t skips() const { return skips_; }  // readings saved by an unchanged stamp

 private:
  struct Process {
    uint64_t start_ticks = 0;  // /proc/<pid>/stat's, at the reading
    uint64_t vsize = 0;
    Clock::time_point read_at;
    std::vector<MapsEntry> files;
  };
  std::unordered_map<pid_t, Process> procs_;
  uint64_t reads_ = 0;
  uint64_t skips_ = 0;
};

}  // namespace tailcause::probes
