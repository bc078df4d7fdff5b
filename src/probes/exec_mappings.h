// SPDX-License-Identifier: Apache-2.0
// The files each process maps executable, from /proc/<pid>/maps, shared by the USDT discovery
// and the uprobe recipes. Reading the maps of a large process costs milliseconds (a process
// with PyTorch maps 1,700 areas) and holds its mmap lock meanwhile, so a process is read again
// only when it may have mapped something new: its virtual size changed (a library mapped or
// unmapped changes it), it is another program (exec, a reused pid), or its last reading is
// older than a bound that catches the improbable case of a mapping and an unmapping of the
// same size between two readings.
//
// Reading every process's /proc/<pid>/stat each second costs the daemon about 15 us a process
// (2% of a core on a node with 1,000 processes). With a change feed (the kernel reports which
// processes asked for a new mapping: bpf/attrib.bpf.c, attrib_remap_btf) a process that is
// known and not reported is taken as it was, without a system call, until kQuiet has passed.
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
  // With a change feed, a process not reported is looked at again at least this often: what
  // the feed cannot see (a mapping at a fixed address in a reserved range, an unmapping) shows
  // within it.
  static constexpr auto kQuiet = std::chrono::seconds(30);
  // With a change feed, kRefresh's case (a mapping and an unmapping of the same size between
  // two readings) is reported: the maps of a process whose stamp did not change are read again
  // only this often.
  static constexpr auto kRefreshFed = std::chrono::minutes(5);
  // With a change feed, /proc is listed this often (listing it costs more than looking at the
  // few reported processes): new processes show sooner through their exec or first mapping,
  // exited ones are forgotten then.
  static constexpr auto kListEvery = std::chrono::seconds(10);

  // The distinct files `pid` maps executable (empty when it exited or cannot be read). `fresh`
  // reads the maps whatever the stamp says (the process just called exec).
  const std::vector<MapsEntry>& of(pid_t pid, bool fresh = false);
  // Forgets processes not in `pids` (a full pass over /proc saw them gone).
  void keep_only(const std::vector<pid_t>& pids);
  // The processes a scan goes over: every one in /proc (`listed` set) without a change feed or
  // when the last listing is kListEvery old, else the known and the reported ones.
  std::vector<pid_t> scan_list(bool& listed);

  // The change feed: once on, only processes reported by changed() (for kReported), new ones,
  // and those not looked at for kQuiet are looked at. all_changed() when reports were lost.
  void use_change_feed(bool on) {
    feed_ = on;
    listed_at_ = {};  // a start lists /proc: what began before the feed was not reported
  }
  bool change_feed() const { return feed_; }
  void changed(pid_t pid);
  void all_changed();

  uint64_t reads() const { return reads_; }  // maps files read
  uint64_t skips() const { return skips_; }  // readings saved by an unchanged stamp
  uint64_t looks() const { return looks_; }  // /proc/<pid>/stat files read

 private:
  struct Process {
    uint64_t start_ticks = 0;  // /proc/<pid>/stat's, at the reading
    uint64_t vsize = 0;
    Clock::time_point read_at;    // of the maps
    Clock::time_point looked_at;  // of /proc/<pid>/stat
    std::vector<MapsEntry> files;
  };
  std::unordered_map<pid_t, Process> procs_;
  // Reported processes, looked at until then: the report comes before the new mapping is in
  // place, so a report is looked at in the pass that takes it and in the next one.
  static constexpr auto kReported = std::chrono::milliseconds(1500);
  std::unordered_map<pid_t, Clock::time_point> changed_;
  bool feed_ = false;
  Clock::time_point listed_at_{};
  uint64_t reads_ = 0;
  uint64_t skips_ = 0;
  uint64_t looks_ = 0;
};

}  // namespace tailcause::probes
