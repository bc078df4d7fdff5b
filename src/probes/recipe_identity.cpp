// SPDX-License-Identifier: Apache-2.0
#include "probes/recipe_identity.h"

#include <fstream>
#include <iterator>

#include "probes/cgroup_names.h"

namespace tailcause::probes {
namespace {

constexpr size_t kMaxCache = 4096;

// At most `max` bytes of a /proc file ("" when the process is gone or not readable).
std::string read_proc(uint32_t pid, const char* name, size_t max) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  std::string out(max, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

}  // namespace

void RecipeIdentity::apply(core::StageRecord& r, CgroupNames* cgroups) {
  const auto key = std::make_pair(r.id.pid, r.cgroup_id);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    if (cache_.size() >= kMaxCache) cache_.clear();  // bounded; answers are cheap to redo
    Answer a;
    std::string cgroup;
    if (cgroups && r.cgroup_id) {
      cgroup = cgroups->name(r.cgroup_id);
      if (cgroup == "/" || cgroup.starts_with("id:")) cgroup.clear();
    }
    if (!rules_.empty()) {
      core::ProcessFacts p;
      p.pid = r.id.pid;
      p.cgroup = cgroup;
      p.comm = r.id.tenant;  // the kernel's comm, as the BPF side copied it
      if (rules_.needs_cmdline())
        p.cmdline = core::parse_cmdline(read_proc(p.pid, "cmdline", 1024));
      const auto names = rules_.env_names();
      // The environment a process started with; hostile bytes, bounded.
      if (!names.empty())
        p.environ = core::parse_environ(read_proc(p.pid, "environ", 65536), names);
      if (auto id = rules_.resolve(p)) a = {id->tenant, id->agent};
    }
    if (a.tenant.empty()) a.tenant = cgroup;  // the default: the cgroup, else the name
    it = cache_.emplace(key, std::move(a)).first;
  }
  if (!it->second.tenant.empty()) r.id.tenant = it->second.tenant;
  if (!it->second.agent.empty()) r.id.agent = it->second.agent;
}

void RecipeIdentity::forget(uint32_t pid) {
  for (auto it = cache_.lower_bound({pid, 0}); it != cache_.end() && it->first.first == pid;) {
    it = cache_.erase(it);
  }
}

}  // namespace tailcause::probes
