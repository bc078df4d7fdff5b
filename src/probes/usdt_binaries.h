// SPDX-License-Identifier: Apache-2.0
// The binaries whose tailcause USDT probes are attached: attaches the ones processes map,
// releases the ones no process has mapped for a grace period (short-lived processes started
// meanwhile run traced instead of flapping attach/release), and closes released links on the
// reaper's threads. The attribution probe holds one per start.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probes/usdt_attach.h"
#include "probes/usdt_discovery.h"
#include "probes/usdt_reaper.h"

namespace tailcause::probes {

class UsdtBinaries {
 public:
  // The programs to attach for the probes a binary carries.
  using ProgramsFor = std::function<std::vector<UsdtProgram>(const MappedBinary&)>;

  // `specs_fd`, `specs_max`: libbpf's USDT argument spec map; `multi`: uprobe_multi links.
  UsdtBinaries(ProgramsFor programs_for, int specs_fd, uint32_t specs_max, bool multi,
               std::chrono::milliseconds release_grace);
  ~UsdtBinaries();  // releases every binary and waits until the links are closed
  UsdtBinaries(const UsdtBinaries&) = delete;
  UsdtBinaries& operator=(const UsdtBinaries&) = delete;

  // Attaches the binary's probes (pid -1: in every process that maps it, the kernel keeping
  // each one's semaphore, also in processes started later). False when none attached.
  bool attach(const MappedBinary& binary, pid_t pid);
  // A process mapped `binary`: attached when it was not, else its grace period is cancelled.
  void mapped(const MappedBinary& binary);
  // After a scan that found `found`: attaches the new ones, releases those no process has
  // mapped for the grace period (at once when narrowed to process `pid` > 0: it is gone).
  void sync(const std::map<BinaryId, MappedBinary>& found, pid_t pid);
  void release(const BinaryId& id);
  // Hands every binary's links to the reaper; the destructor waits for them.
  void release_all();
  void set_release_grace(std::chrono::milliseconds grace) { release_grace_ = grace; }

  size_t size() const { return attached_.size(); }
  bool attached_to(const std::string& path) const;
  size_t links() const;  // one per program and binary with uprobe_multi, else one per site
  bool multi() const { return multi_; }
  size_t spec_ids_in_use() const { return spec_ids_.in_use(); }
  uint64_t attaches() const { return attaches_; }
  uint64_t releases() const { return releases_; }
  // Waits until the links of released binaries are closed (they close on other threads).
  void wait_for_releases() { reaper_.drain(); }

 private:
  struct Attachment {
    std::string path;
    UsdtLinks links;
    std::optional<std::chrono::steady_clock::time_point> unmapped_since;  // no process maps it
  };

  void reap(UsdtLinks links);

  ProgramsFor programs_for_;
  bool multi_;
  std::chrono::milliseconds release_grace_;
  UsdtSpecIds spec_ids_;  // outlives the reaper's work: declared before it
  LinkReaper reaper_;
  std::map<BinaryId, Attachment> attached_;
  uint64_t attaches_ = 0, releases_ = 0;
};

}  // namespace tailcause::probes
