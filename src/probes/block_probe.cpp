// SPDX-License-Identifier: Apache-2.0
#include "core/host/clock.h"
#include "probes/block_probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "probes/bpf_loader.h"
#include "bpf/block.h"
#include "block.skel.h"

namespace tailcause::probes {
namespace {

using core::MetricType;
using Clock = std::chrono::steady_clock;

constexpr const char* kFamily = "block";
constexpr size_t kMaxKeys = 1024;  // max_entries of block_io
constexpr auto kGcInterval = std::chrono::seconds(60);
constexpr const char* kOps[TAILCAUSE_BLOCK_OPS] = {"read", "write", "flush", "discard", "other"};

constexpr size_t kMaxCgroupKeys = 4096;  // max_entries of block_cgroup_io
// How often the per-cgroup I/O goes to the evidence board: finer than a typical stage, so a
// verdict's interval (the stage plus a second each side) holds several readings.
constexpr auto kCgroupInterval = std::chrono::milliseconds(250);

static_assert(sizeof(block_value) % 8 == 0, "per-CPU values are read as 8-byte aligned copies");
static_assert(sizeof(block_cgroup_value) % 8 == 0, "per-CPU values are read as 8-byte copies");

struct OpIo {
  std::array<uint64_t, TAILCAUSE_LOG2_SLOTS> slots{};
  uint64_t sum_ns = 0;
  uint64_t bytes = 0;
  bool seen = false;  // the kernel has an entry for this op: export it, even at zero
};

// One disk's totals over all CPUs, foldable into "__other__".
struct DeviceIo {
  std::array<OpIo, TAILCAUSE_BLOCK_OPS> ops{};
  DeviceIo& operator+=(const DeviceIo& o) {
    for (size_t i = 0; i < ops.size(); ++i) {
      core::add_slots(ops[i].slots, o.ops[i].slots);
      ops[i].sum_ns += o.ops[i].sum_ns;
      ops[i].bytes += o.ops[i].bytes;
      ops[i].seen = ops[i].seen || o.ops[i].seen;
    }
    return *this;
  }
};

std::string sysfs_dir(uint32_t major, uint32_t minor) {
  return fmt::format("/sys/dev/block/{}:{}", major, minor);
}

// Kernels before 5.11 pass (queue, request) to block_rq_issue: read its BTF prototype.
bool rq_issue_has_queue(const Features& features) {
  const auto parsed = start_btf(features);
  const btf* b = parsed.get();
  if (!b) return false;
  bool has_queue = false;
  const int id = btf__find_by_name_kind(b, "btf_trace_block_rq_issue", BTF_KIND_TYPEDEF);
  const btf_type* t = id > 0 ? btf__type_by_id(b, id) : nullptr;  // typedef -> ptr -> proto
  if (t) t = btf__type_by_id(b, t->type);
  if (t && btf_is_ptr(t)) t = btf__type_by_id(b, t->type);
  if (t && btf_is_func_proto(t)) has_queue = btf_vlen(t) == 3;  // (void *, q, rq)
  return has_queue;
}

}  // namespace

TAILCAUSE_SKELETON_DESTROY(block_bpf)

std::string block_device_name(uint32_t major, uint32_t minor) {
  std::ifstream in(sysfs_dir(major, minor) + "/uevent");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
  }
  return "";
}

struct BlockProbe::Series {
  explicit Series(size_t top_k) : budget(top_k), devices(budget) {}
  core::LabelBudget budget;
  core::FoldedSeries<DeviceIo> devices;
};

BlockProbe::BlockProbe() = default;
BlockProbe::~BlockProbe() { stop(); }

void BlockProbe::start(const ProbeContext& ctx) {
  stop();
  series_ = std::make_unique<Series>(ctx.config.top_k);
  names_.clear();
  last_gc_ = Clock::now();
  // Built here and kept only when complete: a failure frees it on the way out.
  const bpf_object_open_opts opts = open_options(ctx.features);
  Handle<block_bpf> skel(block_bpf__open_opts(&opts));
  if (!skel) check(errno ? -errno : -EINVAL, kFamily, "open BPF object");
  skel->rodata->cgroup_v1_cpu = ctx.cgroups.layout().version == CgroupLayout::Version::V1;
  skel->rodata->rq_issue_has_queue = rq_issue_has_queue(ctx.features);
  select_tracepoint_flavour(skel->obj, ctx.features);
  check(block_bpf__load(skel.get()), kFamily, "load BPF programs");
  check(block_bpf__attach(skel.get()), kFamily,
        std::string("attach block_rq_issue/block_rq_complete (") +
            (ctx.features.tp_btf ? "tp_btf" : "raw_tp") + ")");
  skel_ = std::move(skel);
  cgroups_ = &ctx.cgroups;
  spdlog::info("block: attached ({})", ctx.features.tp_btf ? "tp_btf" : "raw_tp");
}

void BlockProbe::stop() {
  skel_.reset();
  cgroups_ = nullptr;
  cgroup_io_.clear();
}

// Who kept the disks busy: each (issuing cgroup, disk)'s requests since the previous reading
// go to the evidence board, where block_io verdicts look for the busiest other cgroup.
void BlockProbe::tick(const ProbeContext& ctx) {
  if (!skel_ || Clock::now() - last_cgroup_read_ < kCgroupInterval) return;
  last_cgroup_read_ = Clock::now();
  const uint64_t now = core::monotonic_ns();
  const int fd = bpf_map__fd(skel_->maps.block_cgroup_io);
  std::vector<block_cgroup_value> values(possible_cpus());
  for (const block_cgroup_key& key : map_keys<block_cgroup_key>(fd, kMaxCgroupKeys)) {
    if (key.cgroup == 0 || bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    block_cgroup_value sum{};
    for (const auto& v : values) {
      sum.requests += v.requests;
      sum.bytes += v.bytes;
      sum.busy_ns += v.busy_ns;
    }
    block_cgroup_value& seen = cgroup_io_[{key.cgroup, key.major, key.minor}];
    if (sum.requests == seen.requests) continue;
    // A cgroup made since the names' last (rate-limited) rescan has no name yet: its I/O waits
    // for a later reading rather than go on the board under a bare id.
    const std::string cgroup = ctx.cgroups.name(key.cgroup);
    if (cgroup.starts_with("id:")) continue;
    ctx.signals.evidence.add_disk_io(cgroup, device_label({key.major, key.minor}), now,
                                     sum.bytes - seen.bytes, sum.busy_ns - seen.busy_ns);
    seen = sum;
  }
}

std::vector<const bpf_program*> BlockProbe::programs() const {
  return loaded_programs(skel_ ? skel_->obj : nullptr);
}

uint64_t BlockProbe::folded_label_values() const { return series_ ? series_->budget.folded() : 0; }

std::string BlockProbe::device_label(const Device& dev) {
  if (auto it = names_.find(dev); it != names_.end()) return it->second;
  std::string name = block_device_name(dev.first, dev.second);
  if (name.empty()) return fmt::format("{}:{}", dev.first, dev.second);  // retried next scrape
  names_[dev] = name;
  return name;
}

void BlockProbe::collect(core::MetricSet& out) {
  if (!skel_) return;
  if (Clock::now() - last_gc_ >= kGcInterval) forget_removed_devices();

  const int fd = bpf_map__fd(skel_->maps.block_io);
  std::map<std::string, DeviceIo> current;
  std::vector<block_value> values(possible_cpus());
  for (const block_key& key : map_keys<block_key>(fd, kMaxKeys)) {
    if (key.op >= TAILCAUSE_BLOCK_OPS) continue;
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    OpIo& op = current[device_label({key.major, key.minor})].ops[key.op];
    op.seen = true;
    for (const auto& v : values) {
      for (size_t i = 0; i < op.slots.size(); ++i) op.slots[i] += v.latency_ns.slots[i];
      op.sum_ns += v.latency_ns.sum;
      op.bytes += v.bytes;
    }
  }
  for (const auto& [device, io] : series_->devices.fold(current)) {
    for (int i = 0; i < TAILCAUSE_BLOCK_OPS; ++i) {
      const OpIo& op = io.ops[i];
      if (!op.seen) continue;
      const core::Labels labels{{"device", device}, {"op", kOps[i]}};
      out.add_histogram(core::metric::kBlockIoLatencySeconds,
                        "Block request latency from issue to the driver until completion", labels,
                        core::log2_to_buckets(op.slots, op.sum_ns, 1e-9, 9, 34));
      out.add(core::metric::kBlockIoBytes, MetricType::Counter,
              "Bytes transferred by completed block requests", labels,
              static_cast<double>(op.bytes), "bytes");
    }
  }

  add_events_lost(out, kFamily, percpu_sum(bpf_map__fd(skel_->maps.block_events_lost), 0));
}

// Hosts that create and remove loop or network disks would fill block_io with dead disks;
// their entries and series go (folded ones stay counted in "__other__").
void BlockProbe::forget_removed_devices() {
  last_gc_ = Clock::now();
  const int fd = bpf_map__fd(skel_->maps.block_io);
  std::error_code ec;
  for (const block_key& key : map_keys<block_key>(fd, kMaxKeys)) {
    if (std::filesystem::exists(sysfs_dir(key.major, key.minor), ec)) continue;
    bpf_map_delete_elem(fd, &key);
    const Device dev{key.major, key.minor};
    series_->budget.forget(device_label(dev));
    names_.erase(dev);
  }
  // Per-cgroup entries of removed cgroups go too (a node that starts a cgroup per job would
  // fill the map).
  const int cfd = bpf_map__fd(skel_->maps.block_cgroup_io);
  for (const block_cgroup_key& key : map_keys<block_cgroup_key>(cfd, kMaxCgroupKeys)) {
    const std::string name = cgroups_ ? cgroups_->name(key.cgroup) : "";
    if (!name.starts_with("id:") && std::filesystem::exists(cgroups_->directory(name), ec))
      continue;
    bpf_map_delete_elem(cfd, &key);
    cgroup_io_.erase({key.cgroup, key.major, key.minor});
  }
}

std::unique_ptr<ProbeFamily> make_block_probe() { return std::make_unique<BlockProbe>(); }

}  // namespace tailcause::probes
