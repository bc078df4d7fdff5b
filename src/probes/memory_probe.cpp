// SPDX-License-Identifier: Apache-2.0
#include "core/host/clock.h"
#include "probes/memory_probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "core/record/schema.h"
#include "probes/bpf_loader.h"
#include "probes/features.h"
#include "probes/syscall_classes.h"
#include "bpf/memory.h"
#include "memory.skel.h"

namespace tailcause::probes {
namespace {

using core::MetricType;
using Clock = std::chrono::steady_clock;

constexpr const char* kFamily = "memory";
constexpr char kPairSeparator = '\x1f';  // cannot occur in a cgroup path
constexpr auto kHarvestInterval = std::chrono::seconds(5);
constexpr auto kGcInterval = std::chrono::seconds(10);
constexpr auto kMemcgInterval = std::chrono::seconds(1);
constexpr auto kUnresolvedGrace = std::chrono::seconds(60);  // CgroupNames rescans every 1 s
// Preallocated per-CPU values of process_memory may use at most this much kernel memory.
constexpr size_t kMapBudgetBytes = 16u << 20;
constexpr uint32_t kMinProcesses = 1024;

static_assert(sizeof(memory_value) % 8 == 0, "per-CPU values are read as 8-byte aligned copies");

std::string pair_key(const std::string& cgroup, const std::string& process) {
  return cgroup + kPairSeparator + process;
}

// A process that is gone (not a zombie) no longer adds to its entry.
bool process_exited(uint32_t tgid) {
  return kill(static_cast<pid_t>(tgid), 0) != 0 && errno == ESRCH;
}

// Reads an entry's per-CPU copies; `remove` also deletes it in the same step where the kernel
// can (5.14+), so no increment falls between reading and deleting.
bool read_entry(int fd, const memory_key& key, bool remove, std::vector<memory_value>& values) {
  values.assign(possible_cpus(), memory_value{});
  if (!remove) return bpf_map_lookup_elem(fd, &key, values.data()) == 0;
  if (bpf_map_lookup_and_delete_elem(fd, &key, values.data()) == 0) return true;
  if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) return false;
  bpf_map_delete_elem(fd, &key);
  return true;
}

// Telling reads from writes reads the task's user register frame (bpf/syscalls.bpf.h), which
// needs bpf_task_pt_regs() (5.15) on a BTF task pointer (5.11), and a frame layout the BPF side
// knows (x86-64, arm64); elsewhere every added page counts.
bool can_tell_writes_apart() {
#if !defined(__x86_64__) && !defined(__aarch64__)
  return false;
#endif
  for (const bpf_func_id helper : {BPF_FUNC_task_pt_regs, BPF_FUNC_get_current_task_btf}) {
    if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, helper, nullptr) != 1) return false;
  }
  return true;
}

// Whether page-cache misses leave out the pages writes add; a warning says why when not.
bool exclude_writes() {
  if (can_tell_writes_apart()) return true;
  spdlog::warn("memory: page-cache misses include pages added by writes ({})",
#if defined(__x86_64__) || defined(__aarch64__)
               "kernel lacks bpf_task_pt_regs()"
#else
               "reads and writes are told apart on x86-64 and arm64 only"
#endif
  );
  return false;
}

int open_major_fault_event(int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
  attr.sample_period = 1;  // every major fault runs the program
  return static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

// One major-fault perf event per CPU, each running `prog`. Optional: without them page-cache
// misses still work, so a failure is logged and nothing is attached.
std::vector<LinkHandle> attach_major_faults(bpf_program* prog) {
  std::vector<LinkHandle> links;
  std::string failure;
  for (int cpu = 0; cpu < possible_cpus(); ++cpu) {
    Fd fd(open_major_fault_event(cpu));
    if (!fd) {
      if (errno == ENODEV) continue;  // offline CPU
      failure = fmt::format("perf_event_open(major-faults, cpu {}): {}", cpu, strerror(errno));
      break;
    }
    LinkHandle link(bpf_program__attach_perf_event(prog, fd.get()));
    if (!link) {
      failure = fmt::format("attach to major-faults on cpu {}: {}", cpu, strerror(errno));
      break;
    }
    fd.release();  // the link owns it now and closes it when destroyed
    links.push_back(std::move(link));
  }
  if (failure.empty() && !links.empty()) return links;
  spdlog::warn("memory: major faults not counted: {}", failure.empty() ? "no online CPU" : failure);
  return {};
}

// Memory cgroup limit reclaim is timed where the kernel has the tracepoints (CONFIG_MEMCG) and
// a memory hierarchy is mounted; elsewhere the rest of the family works without it.
std::optional<CgroupLayout> memcg_reclaim_layout(const Features& features,
                                                 const CgroupLayout& tenants) {
  const auto btf = start_btf(features);
  if (!btf || btf__find_by_name_kind(btf.get(), "btf_trace_mm_vmscan_memcg_reclaim_begin",
                                     BTF_KIND_TYPEDEF) < 0) {
    spdlog::warn(
        "memory: memory cgroup reclaim not timed: the kernel has no memcg reclaim "
        "tracepoints");
    return std::nullopt;
  }
  auto layout = memory_cgroup_layout(tenants);
  if (!layout) spdlog::warn("memory: memory cgroup reclaim not timed: no memory controller");
  return layout;
}

}  // namespace

TAILCAUSE_SKELETON_DESTROY(memory_bpf)

struct MemoryProbe::Series {
  explicit Series(size_t top_k)
      : cgroup_budget(top_k),
        process_budget(top_k),
        cgroups(cgroup_budget),
        processes(process_budget) {}
  core::LabelBudget cgroup_budget;
  core::LabelBudget process_budget;  // over (cgroup, process) pairs
  core::FoldedSeries<MemoryCounts> cgroups;
  core::FoldedSeries<MemoryCounts> processes;
};

MemoryProbe::MemoryProbe() = default;
MemoryProbe::~MemoryProbe() { stop(); }

void MemoryProbe::start(const ProbeContext& ctx) {
  stop();
  cgroups_ = &ctx.cgroups;
  series_ = std::make_unique<Series>(ctx.config.top_k);
  accounted_.clear();
  totals_.clear();
  names_.clear();
  unresolved_since_.clear();
  last_harvest_ = last_gc_ = Clock::now();
  // Built here and kept only when complete: a failure frees them on the way out.
  const bpf_object_open_opts opts = open_options(ctx.features);
  Handle<memory_bpf> skel(memory_bpf__open_opts(&opts));
  if (!skel) check(errno ? -errno : -EINVAL, kFamily, "open BPF object");
  skel->rodata->cgroup_v1_cpu = ctx.cgroups.layout().version == CgroupLayout::Version::V1;
  fill_syscall_classes(skel->rodata->syscall_class);
  select_tracepoint_flavour(skel->obj, ctx.features);

  const size_t per_entry = sizeof(memory_value) * static_cast<size_t>(possible_cpus());
  max_processes_ = static_cast<uint32_t>(std::clamp<size_t>(
      kMapBudgetBytes / per_entry, kMinProcesses, TAILCAUSE_MEMORY_MAX_PROCESSES));
  check(bpf_map__set_max_entries(skel->maps.process_memory, max_processes_), kFamily,
        "size process_memory map");

  skel->rodata->exclude_writes = exclude_writes();
  bpf_program__set_autoload(skel->progs.major_fault, ctx.features.perf_event);
  const auto memcg_layout = memcg_reclaim_layout(ctx.features, ctx.cgroups.layout());
  if (!memcg_layout) {
    for (bpf_program* p : {skel->progs.memcg_reclaim_begin_btf, skel->progs.memcg_reclaim_begin_raw,
                           skel->progs.memcg_reclaim_end_btf, skel->progs.memcg_reclaim_end_raw}) {
      bpf_program__set_autoload(p, false);
    }
  }
  check(memory_bpf__load(skel.get()), kFamily, "load BPF programs");
  check(memory_bpf__attach(skel.get()), kFamily,
        std::string("attach filemap/mm_filemap_add_to_page_cache (") +
            (ctx.features.tp_btf ? "tp_btf" : "raw_tp") + ")");
  std::vector<LinkHandle> fault_links;
  if (ctx.features.perf_event) {
    fault_links = attach_major_faults(skel->progs.major_fault);
  } else {
    spdlog::warn("memory: major faults not counted: software perf events unavailable");
  }
  if (memcg_layout) {
    memcg_ = std::make_unique<MemcgPressure>(*memcg_layout, bpf_map__fd(skel->maps.memcg_reclaim),
                                             ctx.config.top_k);
  }
  skel_ = std::move(skel);
  fault_links_ = std::move(fault_links);
  spdlog::info(
      "memory: attached (page-cache misses{}, {} processes max)",
      fault_links_.empty() ? "" : fmt::format(", major faults on {} CPUs", fault_links_.size()),
      max_processes_);
}

void MemoryProbe::stop() {
  memcg_.reset();
  fault_links_.clear();
  skel_.reset();
}

void MemoryProbe::tick(const ProbeContext& ctx) {
  if (skel_ && Clock::now() - last_harvest_ >= kHarvestInterval) harvest();
  // Reclaim is evidence for glitches that just ended: read it as often as cpu.stat.
  if (memcg_ && Clock::now() - last_memcg_ >= kMemcgInterval) {
    last_memcg_ = Clock::now();
    memcg_->harvest(ctx.signals.evidence, core::monotonic_ns());
  }
}

uint64_t MemoryProbe::folded_label_values() const {
  return series_ ? series_->cgroup_budget.folded() + series_->process_budget.folded() : 0;
}

bool MemoryProbe::tracks_process(uint32_t tgid) const {
  if (!skel_) return false;
  for (const memory_key& key :
       map_keys<memory_key>(bpf_map__fd(skel_->maps.process_memory), max_processes_)) {
    if (key.tgid == tgid) return true;
  }
  return false;
}

std::vector<const bpf_program*> MemoryProbe::programs() const {
  std::vector<const bpf_program*> out;
  if (!skel_) return out;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (!bpf_program__autoload(prog)) continue;
    if (prog == skel_->progs.major_fault && fault_links_.empty()) continue;
    out.push_back(prog);
  }
  return out;
}

// Adds what each kernel entry gained since the last harvest to totals_ under the process's
// current name, and deletes the entries of exited processes. Counting deltas keeps totals
// monotonic whatever happens to the entries (deleted, recreated for a reused pid).
void MemoryProbe::harvest() {
  last_harvest_ = Clock::now();
  const int fd = bpf_map__fd(skel_->maps.process_memory);
  std::vector<memory_value> values;
  for (const memory_key& key : map_keys<memory_key>(fd, max_processes_)) {
    const ProcessKey pk{key.cgroup_id, key.tgid};
    const bool exited = process_exited(key.tgid);
    if (!read_entry(fd, key, exited, values)) {
      if (exited) accounted_.erase(pk);
      continue;
    }

    MemoryCounts now;
    const memory_value* freshest = nullptr;
    for (const auto& v : values) {
      now.page_cache_misses += v.page_cache_misses;
      now.major_faults += v.major_faults;
      if (v.comm_ns && (!freshest || v.comm_ns > freshest->comm_ns)) freshest = &v;
    }
    const size_t comm_len = freshest ? strnlen(freshest->comm, sizeof freshest->comm) : 0;
    const std::string comm = comm_len ? std::string(freshest->comm, comm_len) : std::string(1, '?');

    const MemoryCounts before = accounted_[pk];
    MemoryCounts delta;
    delta.page_cache_misses = now.page_cache_misses >= before.page_cache_misses
                                  ? now.page_cache_misses - before.page_cache_misses
                                  : now.page_cache_misses;
    delta.major_faults = now.major_faults >= before.major_faults
                             ? now.major_faults - before.major_faults
                             : now.major_faults;
    totals_[{key.cgroup_id, comm}] += delta;
    // Only our own deletions remove entries, so an entry missed by a walk (the kernel added
    // or removed others meanwhile) keeps its accounted counts and is not counted twice.
    if (exited) {
      accounted_.erase(pk);
    } else {
      accounted_[pk] = now;
    }
  }
}

std::string MemoryProbe::cgroup_name(uint64_t id) {
  if (auto it = names_.find(id); it != names_.end()) return it->second;
  std::string name = cgroups_->name(id);
  if (name.rfind("id:", 0) == 0) {
    unresolved_since_.try_emplace(id, Clock::now());
  } else {
    names_[id] = name;
    unresolved_since_.erase(id);
  }
  return name;
}

void MemoryProbe::collect(core::MetricSet& out) {
  if (!skel_) return;
  harvest();
  if (Clock::now() - last_gc_ >= kGcInterval) forget_removed_cgroups();
  if (memcg_) memcg_->collect(out);

  std::map<std::string, MemoryCounts> by_cgroup, by_process;
  std::map<std::string, std::pair<std::string, std::string>> labels;
  for (const auto& [key, counts] : totals_) {
    const std::string cgroup = cgroup_name(key.first);
    by_cgroup[cgroup] += counts;
    const std::string pk = pair_key(cgroup, key.second);
    by_process[pk] += counts;
    labels[pk] = {cgroup, key.second};
  }
  const bool faults = counts_major_faults();
  for (const auto& [cgroup, c] : series_->cgroups.fold(by_cgroup)) {
    out.add(core::metric::kPageCacheMisses, MetricType::Counter,
            "Pages the page cache had to add for reads and page faults, per cgroup",
            {{"cgroup", cgroup}}, static_cast<double>(c.page_cache_misses));
    if (faults) {
      out.add(core::metric::kMajorFaults, MetricType::Counter,
              "Page faults that waited for I/O, per cgroup", {{"cgroup", cgroup}},
              static_cast<double>(c.major_faults));
    }
  }
  for (const auto& [pk, c] : series_->processes.fold(by_process)) {
    const auto it = labels.find(pk);
    const core::Labels l{{"cgroup", it != labels.end() ? it->second.first : core::kOtherLabel},
                         {"process", it != labels.end() ? it->second.second : core::kOtherLabel}};
    out.add(core::metric::kProcessPageCacheMisses, MetricType::Counter,
            "Pages the page cache had to add for reads and page faults, per process name", l,
            static_cast<double>(c.page_cache_misses));
    if (faults) {
      out.add(core::metric::kProcessMajorFaults, MetricType::Counter,
              "Page faults that waited for I/O, per process name", l,
              static_cast<double>(c.major_faults));
    }
  }

  add_events_lost(out, kFamily, percpu_sum(bpf_map__fd(skel_->maps.memory_events_lost), 0));
}

// Totals of removed cgroups would accumulate forever on hosts that churn containers. A removed
// cgroup's totals move to a live cgroup of the same path (so that series never goes down), or
// else are dropped with their series (folded ones stay counted in "__other__").
void MemoryProbe::forget_removed_cgroups() {
  last_gc_ = Clock::now();
  std::set<uint64_t> ids, in_map;
  for (const auto& [key, _] : totals_) ids.insert(key.first);
  for (const auto& [key, _] : accounted_) in_map.insert(key.first);

  std::set<uint64_t> gone;
  std::map<std::string, uint64_t> live_id_of_name;
  for (uint64_t id : ids) {
    const std::string name = cgroup_name(id);
    bool removed;
    if (names_.count(id)) {
      struct stat st {};
      removed = !(stat(cgroups_->directory(name).c_str(), &st) == 0 && st.st_ino == id);
    } else {
      removed = Clock::now() - unresolved_since_[id] > kUnresolvedGrace;
    }
    // An entry still in the kernel map belongs to a live process that moved elsewhere.
    if (removed && !in_map.count(id)) {
      gone.insert(id);
    } else {
      live_id_of_name[name] = id;
    }
  }
  if (gone.empty()) return;
  for (auto it = totals_.begin(); it != totals_.end();) {
    const uint64_t id = it->first.first;
    if (!gone.count(id)) {
      ++it;
      continue;
    }
    const std::string name = cgroup_name(id);
    if (auto live = live_id_of_name.find(name); live != live_id_of_name.end()) {
      totals_[{live->second, it->first.second}] += it->second;
    } else {
      series_->process_budget.forget(pair_key(name, it->first.second));
      series_->cgroup_budget.forget(name);
    }
    it = totals_.erase(it);
  }
  for (uint64_t id : gone) {
    names_.erase(id);
    unresolved_since_.erase(id);
  }
  spdlog::debug("memory: forgot {} removed cgroup(s)", gone.size());
}

std::unique_ptr<ProbeFamily> make_memory_probe() { return std::make_unique<MemoryProbe>(); }

}  // namespace tailcause::probes
