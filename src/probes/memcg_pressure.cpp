// SPDX-License-Identifier: Apache-2.0
#include "probes/memcg_pressure.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bpf/memory.h"
#include "core/record/schema.h"
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

std::optional<core::Psi> read_pressure(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  // One read, as the kernel prints the whole file at once; a longer file is refused.
  std::string text(core::kMaxPsiText + 1, '\0');
  const ssize_t n = read(fd, text.data(), text.size());
  close(fd);
  if (n <= 0) return std::nullopt;  // EOPNOTSUPP: PSI off (psi=0, or cgroup.pressure 0)
  text.resize(static_cast<size_t>(n));
  return core::parse_psi(text);
}

MemcgPressure::MemcgPressure(CgroupLayout layout, int map_fd, size_t top_k)
    : names_(std::move(layout)), map_fd_(map_fd), budget_(top_k), series_(budget_) {}

void MemcgPressure::harvest(core::EvidenceBoard& board, uint64_t now_ns) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const auto node = read_pressure(kNodeMemoryPressure);
  if (node) node_psi_ = node;
  for (const uint64_t id : map_keys<uint64_t>(map_fd_, TAILCAUSE_MEMCG_MAX)) {
    Totals t;
    for (const auto& v : percpu_values<memcg_reclaim>(map_fd_, &id)) {
      t.reclaim_ns += v.reclaim_ns;
      t.reclaimed_bytes += v.reclaimed_pages * page;
    }
    const std::string name = names_.name(id);
    if (name.rfind("id:", 0) == 0) continue;  // removed before it could be named
    const std::string directory = names_.directory(name);
    std::optional<core::MemoryStall> stall;
    if (const auto own = read_pressure(directory + "/memory.pressure")) {
      t.has_psi = true;
      t.stall_some_us = own->some.total_us;
      t.stall_full_us = own->full ? own->full->total_us : 0;
      stall = core::MemoryStall{t.stall_some_us, t.stall_full_us, core::StallScope::cgroup};
    } else {
      // A v1 memory cgroup (or a v2 one whose file failed this once: its counters stay).
      if (const auto it = totals_.find(name); it != totals_.end() && it->second.has_psi) {
        t.has_psi = true;
        t.stall_some_us = it->second.stall_some_us;
        t.stall_full_us = it->second.stall_full_us;
      } else if (node) {
        stall = core::MemoryStall{node->some.total_us, node->full ? node->full->total_us : 0,
                                  core::StallScope::node};
      }
    }
    totals_[name] = t;
    const MemoryUse use = read_memory_use(directory);
    board.add_memory_sample(name, now_ns, t.reclaimed_bytes, t.reclaim_ns, use.usage_bytes,
                            use.limit_bytes, stall);
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
    if (!t.has_psi) continue;  // v1: no pressure file of its own
    for (const auto& [kind, us] :
         {std::pair<const char*, uint64_t>{"some", t.stall_some_us}, {"full", t.stall_full_us}}) {
      out.add(core::metric::kMemcgPressureStallSeconds, core::MetricType::Counter,
              "Time tasks of a memory cgroup were stalled on memory (PSI; some: at least one "
              "task, full: all non-idle tasks at once)",
              {{"cgroup", name}, {"kind", kind}}, static_cast<double>(us) * 1e-6, "seconds");
    }
  }
  if (!node_psi_) return;  // no PSI on this kernel, or psi=0
  const auto node = [&](const char* kind, uint64_t us) {
    out.add(core::metric::kMemoryPressureStallSeconds, core::MetricType::Counter,
            "Time tasks of the node were stalled on memory (PSI; some: at least one task, "
            "full: all non-idle tasks at once)",
            {{"kind", kind}}, static_cast<double>(us) * 1e-6, "seconds");
  };
  node("some", node_psi_->some.total_us);
  if (node_psi_->full) node("full", node_psi_->full->total_us);
}

}  // namespace tailcause::probes
