// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "probes/usdt_args.h"

namespace tailcause::probes {
namespace {

// The head of union bpf_attr's link_create as of Linux 6.6, with its uprobe_multi member.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t uprobe_flags;
  uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16 &&
              offsetof(LinkCreateUprobeMulti, pid) == 56);

uint64_t ptr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

int create_uprobe_multi_link(int prog_fd, const std::string& path,
                             const std::vector<uint64_t>& offsets,
                             const std::vector<uint64_t>& ref_ctr_offsets,
                             const std::vector<uint64_t>& cookies, pid_t pid) {
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kAttachUprobeMulti;
  attr.path = ptr(path.c_str());
  attr.offsets = ptr(offsets.data());
  attr.ref_ctr_offsets = ref_ctr_offsets.empty() ? 0 : ptr(ref_ctr_offsets.data());
  attr.cookies = cookies.empty() ? 0 : ptr(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.pid = pid > 0 ? static_cast<uint32_t>(pid) : 0;
  const long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::variant<uint32_t, std::string> UsdtSpecIds::acquire(const std::string& args) {
  std::lock_guard lock(mu_);
  if (auto it = by_args_.find(args); it != by_args_.end()) {
    ++entries_[it->second].refs;
    return it->second;
  }
  auto spec = parse_usdt_args(args);
  if (auto* err = std::get_if<std::string>(&spec)) return std::move(*err);
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (next_ < capacity_) {
    id = next_++;
  } else {
    return fmt::format("all {} USDT argument specs in use", capacity_);
  }
  if (bpf_map_update_elem(map_fd_, &id, &std::get<UsdtSpec>(spec), BPF_ANY) != 0) {
    free_.push_back(id);
    return fmt::format("write USDT argument spec: {}", strerror(errno));
  }
  by_args_[args] = id;
  entries_[id] = Entry{args, 1};
  return id;
}

void UsdtSpecIds::release(const std::vector<uint32_t>& ids) {
  std::lock_guard lock(mu_);
  for (uint32_t id : ids) {
    auto it = entries_.find(id);
    if (it == entries_.end() || --it->second.refs > 0) continue;
    // The map keeps the stale spec: no link uses the id until it is written again.
    by_args_.erase(it->second.args);
    entries_.erase(it);
    free_.push_back(id);
  }
}

size_t UsdtSpecIds::in_use() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

UsdtLinks attach_usdt(const std::string& path, const UsdtSites& sites,
                      const std::vector<UsdtProgram>& programs, pid_t pid, bool multi,
                      UsdtSpecIds& ids, std::vector<std::string>& problems) {
  UsdtLinks out;
  for (const auto& [probe, prog] : programs) {
    std::vector<uint64_t> offsets, ref_ctrs, cookies;
    std::vector<uint32_t> spec_ids;
    bool any_semaphore = false;
    for (const UsdtSite& site : sites.sites) {
      if (site.name != probe) continue;
      auto id = ids.acquire(site.args);
      if (auto* err = std::get_if<std::string>(&id)) {
        problems.push_back(fmt::format("{}: {}", probe, *err));
        continue;
      }
      spec_ids.push_back(std::get<uint32_t>(id));
      offsets.push_back(site.offset);
      ref_ctrs.push_back(site.semaphore_offset);
      cookies.push_back(std::get<uint32_t>(id));
      any_semaphore = any_semaphore || site.semaphore_offset != 0;
    }
    if (offsets.empty()) continue;
    size_t attached = 0;
    if (multi) {
      const int fd = create_uprobe_multi_link(bpf_program__fd(prog), path, offsets,
                                              any_semaphore ? ref_ctrs : std::vector<uint64_t>{},
                                              cookies, pid);
      if (fd < 0) {
        problems.push_back(fmt::format("{}: uprobe_multi link: {}", probe, strerror(-fd)));
      } else {
        out.multi.emplace_back(fd);
        attached = offsets.size();
      }
    } else {
      for (size_t i = 0; i < offsets.size(); ++i) {
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = ref_ctrs[i], .bpf_cookie = cookies[i]);
        LinkHandle l(bpf_program__attach_uprobe_opts(prog, pid, path.c_str(), offsets[i], &opts));
        if (!l) {
          problems.push_back(
              fmt::format("{}: uprobe at {:#x}: {}", probe, offsets[i], strerror(errno)));
          continue;
        }
        out.perf.push_back(std::move(l));
        ++attached;
      }
    }
    out.sites += attached;
    if (attached) {
      out.spec_ids.insert(out.spec_ids.end(), spec_ids.begin(), spec_ids.end());
    } else {
      ids.release(spec_ids);
    }
  }
  return out;
}

}  // namespace tailcause::probes
