// SPDX-License-Identifier: Apache-2.0
// The uprobes this process holds, as the kernel sees them: uprobe_multi links (with the sites
// each carries) and perf-event descriptors (each perf-event uprobe holds one).
#pragma once

#include <bpf/bpf.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tailcause::testing {

inline constexpr uint32_t kLinkTypeUprobeMulti = 12;  // BPF_LINK_TYPE_UPROBE_MULTI

struct KernelUprobes {
  size_t multi_links = 0;
  size_t multi_sites = 0;  // uprobes those links carry, as the kernel counts them
  size_t perf_events = 0;  // perf-event descriptors (each perf-event uprobe holds one)
};

// What this process holds, from /proc/self/fd and the kernel's link info.
inline KernelUprobes held_uprobes() {
  KernelUprobes out;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return out;
  while (const dirent* e = readdir(dir)) {
    char target[64];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    const std::string what(target, len);
    if (what == "anon_inode:[perf_event]") ++out.perf_events;
    if (what != "anon_inode:bpf_link") continue;
    // struct bpf_link_info: type, id, prog_id, then (8-aligned) the uprobe_multi member whose
    // `count` lies at byte 52. The installed uapi header predates that member.
    alignas(8) unsigned char info[256] = {};
    __u32 size = sizeof info;
    if (bpf_obj_get_info_by_fd(std::atoi(e->d_name), info, &size) != 0) continue;
    uint32_t type, count;
    std::memcpy(&type, info, 4);
    std::memcpy(&count, info + 52, 4);
    if (type != kLinkTypeUprobeMulti) continue;
    ++out.multi_links;
    out.multi_sites += count;
  }
  closedir(dir);
  return out;
}

}  // namespace tailcause::testing
