// SPDX-License-Identifier: Apache-2.0
// Our own USDT attachment, for the attribution family: the probe sites of a binary (from its
// SDT notes) each get an argument spec in libbpf's __bpf_usdt_specs map, under an id the
// site's uprobe hands the program as its BPF cookie, so <bpf/usdt.bpf.h>'s bpf_usdt_arg()
// works unchanged on the BPF side.
//
// Two ways to place the uprobes:
//  - uprobe_multi (Linux 6.6+): one link per (program, binary) carrying every site, created and
//    closed with one syscall. Closing it waits for an RCU grace period but takes no global lock,
//    so links closed at once share one.
//  - one perf-event uprobe per site through libbpf (older kernels). Each one closed costs tens of
//    milliseconds under the kernel's global event_mutex.
// libbpf 1.1.2 (Debian 12's) has no uprobe_multi support at all and its own USDT attach makes one
// perf-event uprobe per site, which is why this exists.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "probes/handles.h"
#include "probes/usdt_notes.h"

struct bpf_object;
struct bpf_program;

namespace tailcause::probes {

// The kernel's attach type for uprobe_multi links and programs (BPF_TRACE_UPROBE_MULTI); the
// system's <linux/bpf.h> may predate it.
inline constexpr uint32_t kAttachUprobeMulti = 48;

// BPF_LINK_CREATE of a uprobe_multi link, written by hand (libbpf 1.1.2 has no wrapper and the
// installed uapi header no attr fields for it). pid 0: every process mapping `path`.
// Returns the link's fd, or -errno.
int create_uprobe_multi_link(int prog_fd, const std::string& path,
                             const std::vector<uint64_t>& offsets,
                             const std::vector<uint64_t>& ref_ctr_offsets,
                             const std::vector<uint64_t>& cookies, pid_t pid);

// Ids in __bpf_usdt_specs: one per distinct argument string, shared by the sites that have it,
// freed when the last holder releases it (from any thread: the link reaper releases them once
// the links that use them are closed).
class UsdtSpecIds {
 public:
  UsdtSpecIds(int map_fd, uint32_t capacity) : map_fd_(map_fd), capacity_(capacity) {}
  // The id of `args`' spec (written to the map when new), or why there is none.
  std::variant<uint32_t, std::string> acquire(const std::string& args);
  void release(const std::vector<uint32_t>& ids);
  size_t in_use() const;

 private:
  struct Entry {
    std::string args;
    uint32_t refs = 0;
  };
  mutable std::mutex mu_;
  int map_fd_;
  uint32_t capacity_;
  std::map<std::string, uint32_t> by_args_;
  std::map<uint32_t, Entry> entries_;
  std::vector<uint32_t> free_;
  uint32_t next_ = 0;
};

// What one binary's attachment holds: close the links, then release the spec ids.
struct UsdtLinks {
  std::vector<Fd> multi;         // uprobe_multi links, one per program
  std::vector<LinkHandle> perf;  // perf-event uprobes, one per site
  std::vector<uint32_t> spec_ids;
  size_t sites = 0;  // probe sites covered
  size_t count() const { return multi.size() + perf.size(); }
};

// A program and the probe name it handles.
struct UsdtProgram {
  std::string probe;
  bpf_program* program;
};

// Attaches `programs` to their sites in the binary at `path` (pid -1: every process mapping it).
// Sites that cannot be attached are skipped with a line in `problems`.
UsdtLinks attach_usdt(const std::string& path, const UsdtSites& sites,
                      const std::vector<UsdtProgram>& programs, pid_t pid, bool multi,
                      UsdtSpecIds& ids, std::vector<std::string>& problems);

}  // namespace tailcause::probes
