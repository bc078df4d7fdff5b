// SPDX-License-Identifier: Apache-2.0
#include "probes/memcg_pressure.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bpf/memory.h"
#include "core/schema.h"
#include "probes/bpf_loader.h"

namespace tailcause::probes {
namespace {

namespace fs = std::filesystem;

// A control file's first token as a number; nullopt for "max", garbage or a missing file.
std::optional<uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (!(in >> token) || token.empty() || token.size() > 20) return std::nullopt;
  for (char c : token) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  try {
    return std::stoull(token);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<CgroupLayout> memory_cgroup_layout(const CgroupLayout& tenants) {
  const std::string v1 = "/sys/fs/cgroup/memory";
  if (fs::exists(v1 + "/memory.limit_in_bytes")) {
    return CgroupLayout{CgroupLayout::Version::V1, v1, false};
  }
  if (tenants.version == CgroupLayout::Version::V2) {
    std::ifstream in(tenants.root + "/cgroup.controllers");
    std::string controller;
    while (in >> controller) {
      if (controller == "memory")
        return CgroupLayout{CgroupLayout::Version::V2, tenants.root, false};
    }
  }
  return std::nullopt;
}

MemoryUse read_memory_use(const std::string& directory) {
  MemoryUse use;
  // v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages); v2 with "max".
  constexpr uint64_t kUnlimited = uint64_t{1} << 60;
  if (fs::exists(directory + "/memory.limit_in_bytes")) {
    use.usage_bytes = read_number(directory + "/memory.usage_in_bytes").value_or(0);
    use.limit_bytes = read_number(directory + "/memory.limit_in_bytes");
  } else {
    use.usage_bytes = read_number(directory + "/memory.current").value_or(0);
    use.limit_bytes = read_number(directory + "/memory.max");
  }
  if (use.limit_bytes && *use.limit_bytes >= kUnlimited) use.limit_bytes.reset();
  return use;
}

MemcgPressure::MemcgPressure(CgroupLayout layout, int map_fd, size_t top_k)
    : names_(std::move(layout)), map_fd_(map_fd), budget_(top_k), series_(budget_) {}

void MemcgPressure::harvest(core::EvidenceBoard& board, uint64_t now_ns) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const uint64_t id : map_keys<uint64_t>(map_fd_, TAILCAUSE_MEMCG_MAX)) {
    Totals t;
    for (const auto& v : percpu_values<memcg_reclaim>(map_fd_, &id)) {
      t.reclaim_ns += v.reclaim_ns;
      t.reclaimed_bytes += v.reclaimed_pages * page;
    }
    const std::string name = names_.name(id);
    if (name.rfind("id:", 0) == 0) continue;  // removed before it could be named
    totals_[name] = t;
    const MemoryUse use = read_memory_use(names_.directory(name));
    board.add_memory_sample(name, now_ns, t.reclaimed_bytes, t.reclaim_ns, use.usage_bytes,
                            use.limit_bytes);
  }
}

void MemcgPressure::collect(core::MetricSet& out) {
  for (const auto& [name, t] : series_.fold(totals_)) {
    const core::Labels l{{"cgroup", name}};
    out.add(core::metric::kMemcgReclaimSeconds, core::MetricType::Counter,
            "Time tasks of a memory cgroup spent reclaiming memory because a cgroup limit was "
            "reached",
            l, static_cast<double>(t.reclaim_ns) * 1e-9, "seconds");
    out.add(core::metric::kMemcgReclaimedBytes, core::MetricType::Counter,
            "Memory freed by reclaim forced by a memory cgroup limit", l,
            static_cast<double>(t.reclaimed_bytes), "bytes");
  }
}

}  // namespace tailcause::probes
