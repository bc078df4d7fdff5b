// SPDX-License-Identifier: Apache-2.0
#include "probes/attrib_probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>

#include <fmt/format.h>

#include "bpf/attrib.h"
#include "core/host/clock.h"
#include "core/record/schema.h"
#include "core/trace/trace_ids.h"
#include "probes/bpf_loader.h"
#include "probes/cgroup_names.h"
#include "probes/features.h"
#include "probes/ring_reader.h"
#include "probes/syscall_classes.h"
#include "probes/usdt_args.h"
#include "attrib.skel.h"

namespace tailcause::probes {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRescanInterval = std::chrono::seconds(1);
constexpr auto kGcInterval = std::chrono::seconds(10);
// Wake the reader early once this much is waiting; otherwise it drains every tick (100 ms).
constexpr uint64_t kWakeupBytes = ATTRIB_RINGBUF_BYTES / ATTRIB_RINGBUF_WAKEUP_DIVISOR;

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;  // clang 14 lacks C++20's aggregate deduction

bool process_alive(uint32_t pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

// Whether the kernel's BTF (null: none) has the tracepoint `name` (its btf_trace_ typedef).
bool has_tracepoint(const ::btf* btf, const std::string& name) {
  return btf && btf__find_by_name_kind(btf, ("btf_trace_" + name).c_str(), BTF_KIND_TYPEDEF) >= 0;
}

// Stops the probe when start() leaves by an exception: a failed start leaves nothing loaded.
struct StopOnFailure {
  AttribProbe& probe;
  const int exceptions = std::uncaught_exceptions();
  ~StopOnFailure() {
    if (std::uncaught_exceptions() > exceptions) probe.stop();
  }
};

// What the family needs of the kernel, and the binary and process it is narrowed to (if any).
void require_kernel_and_target(const Features& features, const std::string& binary, pid_t pid) {
  std::string missing;
  if (!features.tp_btf) missing += " BTF tracepoints";
  if (!features.task_storage) missing += " task storage";
  if (!features.ringbuf) missing += " BPF ring buffer";
  if (!missing.empty()) {
    throw ProbeError("attrib: the kernel lacks" + missing + " (needs Linux 5.15 or later)");
  }
  if (!binary.empty() && access(binary.c_str(), R_OK) != 0) {
    throw ProbeError(fmt::format("attrib: binary {}: {}", binary, strerror(errno)));
  }
  if (pid && !process_alive(pid)) throw ProbeError(fmt::format("attrib: no process {}", pid));
}

// Whether USDT probes attach as uprobe_multi links. With --pid, only where their pid filter
// passes every thread of the process (Linux 6.10 on).
bool use_uprobe_multi(const Features& features, pid_t only_pid) {
  const bool multi = features.uprobe_multi && (only_pid == 0 || features.uprobe_multi_pid_filter);
  if (features.uprobe_multi && !multi) {
    spdlog::info(
        "attrib: this kernel's uprobe_multi pid filter matches one thread, so process "
        "{}'s probes attach as perf-event uprobes",
        only_pid);
  }
  return multi;
}

}  // namespace

TAILCAUSE_SKELETON_DESTROY(attrib_bpf)

AttribProbe::AttribProbe() = default;
AttribProbe::~AttribProbe() { stop(); }

void AttribProbe::start(const ProbeContext& ctx) {
  stop();
  take_settings(ctx);
  const StopOnFailure guard{*this};
  require_kernel_and_target(ctx.features, only_binary_, only_pid_);
  const bool multi = load_programs(ctx);
  track_usdt_binaries(multi);
  cgroups_ = &ctx.cgroups;
  attach_core_programs(ctx);
  load_recipes(ctx.config.attrib);
  try {
    identity_.configure(core::IdentityRules(ctx.config.attrib.identity));
  } catch (const std::exception& e) {  // the config parser checked them: not expected
    spdlog::error("attrib: {}; identity rules ignored", e.what());
  }
  ring_ = std::make_unique<RingReader>(bpf_map__fd(skel_->maps.attrib_events),
                                       [this](std::span<const std::byte> r) { on_record(r); });
  attach_binaries();
  rescan_recipes();
  last_gc_ = Clock::now();
  spdlog::info("attrib: attached ({} binar{} with tailcause probes{})", usdt_->size(),
               usdt_->size() == 1 ? "y" : "ies",
               only_pid_ ? fmt::format(", process {} only", only_pid_) : std::string());
}

// This start's settings and a fresh aggregator; the counters restart.
void AttribProbe::take_settings(const ProbeContext& ctx) {
  const auto& cfg = ctx.config.attrib;
  only_pid_ = static_cast<pid_t>(cfg.pid);
  layers_ = cfg.layers;
  only_binary_ = cfg.binary;
  const core::LimitsSettings& limits = ctx.config.limits;
  aggregator_ = std::make_unique<core::StageAggregator>(
      ctx.config.top_k, core::SeriesLimits{.stage = limits.stage_series,
                                           .request = limits.request_series,
                                           .cache = limits.cache_series});
  aggregator_->set_clock_offset(static_cast<double>(core::realtime_minus_monotonic_ns()) * 1e-9);
  if (ctx.on_record) observer_ = *ctx.on_record;
  trace_salt_ = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
  records_ = malformed_ = 0;
}

// Opens the BPF object, sets its constants and which programs load, and loads it. Returns
// whether the USDT programs were loaded for uprobe_multi links.
bool AttribProbe::load_programs(const ProbeContext& ctx) {
  const bpf_object_open_opts opts = open_options(ctx.features);
  skel_.reset(attrib_bpf__open_opts(&opts));
  if (!skel_) check(errno ? -errno : -EINVAL, kFamily, "open BPF object");
  skel_->rodata->cgroup_v1_cpu = ctx.cgroups.layout().version == CgroupLayout::Version::V1;
  skel_->rodata->wakeup_bytes = kWakeupBytes;
  skel_->rodata->report_exec = only_pid_ == 0 && only_binary_.empty();
  // Optional sources: major faults need software perf events; reclaim time (counted as
  // block_io) the vmscan tracepoints.
  bpf_program__set_autoload(skel_->progs.attrib_major_fault, ctx.features.perf_event);
  set_reclaim_autoload(ctx.features);
  set_remap_autoload(ctx.features);
  fill_syscall_classes(skel_->rodata->syscall_class);
  // uprobe_multi links take programs loaded for them (and then only them).
  const bool multi = use_uprobe_multi(ctx.features, only_pid_);
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (multi && std::strcmp(bpf_program__section_name(prog), "usdt") == 0) {
      bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kAttachUprobeMulti));
    }
  }
  check(attrib_bpf__load(skel_.get()), kFamily, "load BPF programs");
  return multi;
}

// The attachments of USDT probes, which write their argument specs into libbpf's map.
void AttribProbe::track_usdt_binaries(bool multi) {
  const bpf_map* specs = bpf_object__find_map_by_name(skel_->obj, "__bpf_usdt_specs");
  if (!specs || bpf_map__value_size(specs) != sizeof(UsdtSpec)) {
    throw ProbeError("attrib: libbpf's USDT argument spec map is not the layout this build knows");
  }
  usdt_ = std::make_unique<UsdtBinaries>([this](const MappedBinary& b) { return usdt_programs(b); },
                                         bpf_map__fd(specs), bpf_map__max_entries(specs), multi,
                                         release_grace_);
}

// The one binary probes.attrib.binary names (for one process when narrowed to one), or else
// every binary with tailcause probes that running processes map.
void AttribProbe::attach_binaries() {
  if (only_binary_.empty()) {
    rescan();
    return;
  }
  auto sites = std::make_shared<UsdtSites>(read_usdt_sites(only_binary_, kUsdtProvider));
  MappedBinary b{{}, only_binary_, {}, sites, {}};
  for (const auto& site : sites->sites) b.probes.insert(site.name);
  if (b.probes.empty()) {
    throw ProbeError("attrib: " + only_binary_ + " carries no tailcause USDT probes");
  }
  if (!usdt_->attach(b, only_pid_ ? only_pid_ : -1)) {
    throw ProbeError("attrib: cannot attach to " + only_binary_);
  }
}

void AttribProbe::attach_core_programs(const ProbeContext& ctx) {
  bpf_program* required[] = {
      skel_->progs.attrib_switch_btf,  skel_->progs.attrib_waking_btf,
      skel_->progs.attrib_migrate_btf, skel_->progs.attrib_exit_btf,
      skel_->progs.attrib_exec_btf,    skel_->progs.attrib_page_cache_add_btf};
  for (bpf_program* p : required) {
    LinkHandle l(bpf_program__attach(p));
    if (!l) check(-errno, kFamily, std::string("attach ") + bpf_program__name(p));
    links_.push_back(std::move(l));
  }
  if (ctx.features.perf_event) attach_major_faults();
  if (bpf_program__autoload(skel_->progs.attrib_remap_btf)) attach_remap_feed();
  // A pair attaches whole or not at all: a begin without its end would count the thread's
  // CPU time as block_io until its next span.
  for (const auto& pair : reclaim_pairs()) {
    if (!bpf_program__autoload(pair.begin)) continue;
    LinkHandle begin(bpf_program__attach(pair.begin));
    LinkHandle end(begin ? bpf_program__attach(pair.end) : nullptr);
    if (!begin || !end) {
      spdlog::warn("attrib: {} reclaim not timed ({}): its time in stages counts as on_cpu",
                   pair.kind, strerror(errno));
      continue;
    }
    links_.push_back(std::move(begin));
    links_.push_back(std::move(end));
  }
}

std::array<AttribProbe::ReclaimPair, 2> AttribProbe::reclaim_pairs() const {
  return {{{skel_->progs.attrib_direct_reclaim_begin_btf,
            skel_->progs.attrib_direct_reclaim_end_btf, "direct"},
           {skel_->progs.attrib_memcg_reclaim_begin_btf, skel_->progs.attrib_memcg_reclaim_end_btf,
            "memcg"}}};
}

// The reclaim pairs whose two tracepoints the kernel has keep their autoload; the others are
// left out of the load (memory-cgroup reclaim's exist only with CONFIG_MEMCG).
void AttribProbe::set_reclaim_autoload(const Features& features) {
  const auto btf = start_btf(features);
  bool any = false;
  for (const auto& pair : reclaim_pairs()) {
    const std::string stem = fmt::format("mm_vmscan_{}_reclaim_", pair.kind);
    const bool both =
        has_tracepoint(btf.get(), stem + "begin") && has_tracepoint(btf.get(), stem + "end");
    bpf_program__set_autoload(pair.begin, both);
    bpf_program__set_autoload(pair.end, both);
    any = any || both;
  }
  if (!any) spdlog::warn("attrib: no reclaim tracepoints: reclaim time in stages counts as on_cpu");
}

// The reports of new mappings serve the whole-node discovery, where the kernel has the
// tracepoint (older ones lack it): without them every process's /proc/PID/stat is read each
// second.
void AttribProbe::set_remap_autoload(const Features& features) {
  bpf_program__set_autoload(
      skel_->progs.attrib_remap_btf,
      skel_->rodata->report_exec && has_tracepoint(start_btf(features).get(), "vm_unmapped_area"));
}

void AttribProbe::attach_remap_feed() {
  LinkHandle l(bpf_program__attach(skel_->progs.attrib_remap_btf));
  if (!l) {
    spdlog::warn("attrib: new mappings not reported ({}): each process's stat is read each second",
                 strerror(errno));
    return;
  }
  links_.push_back(std::move(l));
  maps_.use_change_feed(true);
}

// Takes the processes the kernel reported since the last scan out of attrib_remapped, each key
// deleted before its process is looked at (a report after that waits for the next scan).
void AttribProbe::take_remap_reports() {
  if (!maps_.change_feed()) return;
  const int fd = bpf_map__fd(skel_->maps.attrib_remapped);
  uint32_t tgid = 0;
  for (uint32_t n = 0; n < ATTRIB_MAX_REMAPPED && bpf_map_get_next_key(fd, nullptr, &tgid) == 0;
       ++n) {
    bpf_map_delete_elem(fd, &tgid);
    maps_.changed(static_cast<pid_t>(tgid));
  }
  if (__atomic_exchange_n(&skel_->bss->attrib_remapped_overflow, 0, __ATOMIC_RELAXED)) {
    maps_.all_changed();  // the map was full: reports were lost
  }
}

// One PERF_COUNT_SW_PAGE_FAULTS_MAJ event per CPU, each running the program on every fault.
void AttribProbe::attach_major_faults() {
  for (int cpu = 0; cpu < possible_cpus(); ++cpu) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
    attr.sample_period = 1;
    Fd fd(
        static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
    if (!fd) {
      if (errno == ENODEV) continue;  // offline CPU
      spdlog::warn("attrib: major faults not counted: perf_event_open(cpu {}): {}", cpu,
                   strerror(errno));
      return;
    }
    LinkHandle l(bpf_program__attach_perf_event(skel_->progs.attrib_major_fault, fd.get()));
    if (!l) {
      spdlog::warn("attrib: major faults not counted: {}", strerror(errno));
      return;
    }
    fd.release();  // the link owns it now and closes it when destroyed
    links_.push_back(std::move(l));
  }
}

void AttribProbe::stop() {
  // Links before the object that holds their programs, the ring before its map. The USDT
  // links close in parallel: their waits for grace periods overlap.
  recipes_.detach_all();
  if (usdt_) usdt_->release_all();
  links_.clear();
  usdt_.reset();  // waits until its links are closed
  ring_.reset();
  skel_.reset();
  maps_.use_change_feed(false);
  pending_execs_.clear();
  pending_exits_.clear();
}

int AttribProbe::event_fd() const { return ring_ ? ring_->event_fd() : -1; }

void AttribProbe::on_record(std::span<const std::byte> bytes) {
  ++records_;
  auto record = core::decode_record(bytes);
  if (!record) {
    ++malformed_;
    return;
  }
  if (auto* span = std::get_if<core::StageRecord>(&*record); span && span->id.synthetic) {
    // A runtime without the SDK: the identity rules' tenant, else its cgroup, else its
    // process name; its calls reach the rest grouped into requests.
    identity_.apply(*span, cgroups_);
    recipe_requests_.add(*span, grouped_);
    dispatch_grouped();
    return;
  }
  dispatch(*record);
}

void AttribProbe::dispatch(core::Record& record) {
  // Requests the agent gave no trace id get a derived one, the same for the request and all
  // its stages, so exemplars and exported traces agree.
  std::visit(
      [this](auto& r) {
        if constexpr (requires { r.id.trace_id; }) {
          auto& id = r.id;
          if (id.trace_id.empty() && id.request_id != 0 && !id.synthetic) {
            id.trace_id = core::derive_trace_id(id.pid, id.request_id, trace_salt_);
            id.derived_trace_id = true;
          }
        }
      },
      record);
  std::visit(overloaded{[this](const core::ProcessRecord& p) {
                          (p.exec ? pending_execs_ : pending_exits_).insert(p.pid);
                        },
                        [this](const auto& r) { aggregator_->add(r); }},
             record);
  if (observer_) observer_(record);
}

void AttribProbe::dispatch_grouped() {
  for (auto& r : grouped_) dispatch(r);
  grouped_.clear();
}

void AttribProbe::drain() {
  if (ring_) ring_->consume();
}

void AttribProbe::consume() {
  drain();
  handle_pending();
}

void AttribProbe::handle_pending() {
  if (!skel_) return;
  if (!pending_execs_.empty() && only_pid_ == 0 && only_binary_.empty()) {
    for (uint32_t pid : pending_execs_) {
      for (const auto& b : discovery_.scan_process(static_cast<pid_t>(pid), true)) {
        usdt_->mapped(b);
      }
    }
  }
  for (uint32_t pid : pending_execs_) identity_.forget(pid);  // a new program: ask again
  pending_execs_.clear();
  if (!pending_exits_.empty()) {
    for (uint32_t pid : pending_exits_) {
      identity_.forget(pid);
      recipe_requests_.end_process(pid, grouped_);
    }
    dispatch_grouped();
    free_requests(pending_exits_, false);
    pending_exits_.clear();
  }
}

void AttribProbe::tick(const ProbeContext& ctx) {
  consume();
  recipe_requests_.flush(core::monotonic_ns(), grouped_);
  dispatch_grouped();
  const auto now = Clock::now();
  // Each scan reads /proc (milliseconds on a busy node): drain after it, so the small ring
  // is not left filling for two scans in a row.
  if (only_binary_.empty() && now - last_scan_ >= kRescanInterval) {
    rescan();
    drain();
  }
  if (now - last_recipe_scan_ >= kRescanInterval) {
    rescan_recipes();
    drain();
  }
  if (now - last_gc_ >= kGcInterval) {
    last_gc_ = now;
    free_requests({}, true);
  }
}

void AttribProbe::rescan() {
  if (!skel_ || !only_binary_.empty()) return;
  last_scan_ = Clock::now();
  if (only_pid_) {
    std::map<BinaryId, MappedBinary> found;
    for (auto& b : discovery_.scan_process(only_pid_, false)) found.emplace(b.id, std::move(b));
    usdt_->sync(found, only_pid_);
  } else {
    take_remap_reports();
    usdt_->sync(discovery_.scan_all(), -1);
  }
}

void AttribProbe::set_release_grace(std::chrono::milliseconds grace) {
  release_grace_ = grace;
  if (usdt_) usdt_->set_release_grace(grace);
}

std::vector<UsdtProgram> AttribProbe::usdt_programs(const MappedBinary& binary) const {
  std::vector<UsdtProgram> programs;
  for (const auto& probe : binary.probes) {
    bpf_program* prog = bpf_object__find_program_by_name(skel_->obj, probe.c_str());
    if (!prog || bpf_program__type(prog) != BPF_PROG_TYPE_KPROBE) continue;      // unknown probe
    if (!layers_ && (probe == "layer_begin" || probe == "layer_end")) continue;  // opt-in
    programs.push_back({probe, prog});
  }
  return programs;
}

void AttribProbe::free_requests(const std::set<uint32_t>& dead, bool all_dead) {
  if (!skel_) return;
  const int fd = bpf_map__fd(skel_->maps.attrib_requests);
  std::map<uint32_t, bool> alive;  // per tgid, asked once
  uint64_t freed = 0;
  for (const auto& key : map_keys<attrib_request_key>(fd, ATTRIB_MAX_REQUESTS)) {
    bool gone = dead.count(key.tgid) > 0;
    if (!gone && all_dead) {
      auto [it, fresh] = alive.try_emplace(key.tgid, true);
      if (fresh) it->second = process_alive(key.tgid);
      gone = !it->second;
    }
    if (gone && bpf_map_delete_elem(fd, &key) == 0) ++freed;
  }
  if (all_dead) {  // the exit events of these may have been lost
    const int pfd = bpf_map__fd(skel_->maps.attrib_processes);
    for (uint32_t tgid : map_keys<uint32_t>(pfd, ATTRIB_MAX_PROCESSES)) {
      if (!process_alive(tgid)) bpf_map_delete_elem(pfd, &tgid);
    }
  }
  if (freed) {
    aggregator_->count_error(core::kErrorRequestNotEnded, freed);
    spdlog::debug("attrib: freed {} request(s) of exited processes", freed);
  }
}

size_t AttribProbe::live_requests(uint32_t pid) const {
  if (!skel_) return 0;
  const auto keys =
      map_keys<attrib_request_key>(bpf_map__fd(skel_->maps.attrib_requests), ATTRIB_MAX_REQUESTS);
  return std::count_if(keys.begin(), keys.end(),
                       [pid](const auto& k) { return pid == 0 || k.tgid == pid; });
}

size_t AttribProbe::live_processes(uint32_t pid) const {
  if (!skel_) return 0;
  const auto keys =
      map_keys<uint32_t>(bpf_map__fd(skel_->maps.attrib_processes), ATTRIB_MAX_PROCESSES);
  return std::count_if(keys.begin(), keys.end(),
                       [pid](uint32_t k) { return pid == 0 || k == pid; });
}

uint64_t AttribProbe::lost(uint32_t kind) const {
  return skel_ ? percpu_sum(bpf_map__fd(skel_->maps.attrib_events_lost), kind) : 0;
}

uint64_t AttribProbe::events_lost() const { return lost(ATTRIB_LOST_DROPPED); }
uint64_t AttribProbe::missed_switches() const { return lost(ATTRIB_LOST_SWITCHES); }

int64_t AttribProbe::spans_in_progress() const {
  return skel_ ? __atomic_load_n(&skel_->bss->attrib_active_spans, __ATOMIC_RELAXED) : 0;
}

int64_t AttribProbe::spans_in_process_gates() const {
  int64_t n = 0;
  if (!skel_) return n;
  for (const auto& gate : skel_->bss->attrib_spans_by_process) {
    n += std::abs(static_cast<int64_t>(__atomic_load_n(&gate, __ATOMIC_RELAXED)));
  }
  return n;
}

void AttribProbe::collect(core::MetricSet& out) {
  if (!skel_) return;
  drain();  // what finished before the scrape is in it; attaching waits for the next tick
  read_kernel_totals();
  aggregator_->collect(out);
  collect_kernel_counters(out);
  collect_recipes(out);
  collect_usdt(out);
}

// The kernel's per-CPU SDK error counts and layer histograms, summed into the aggregator.
void AttribProbe::read_kernel_totals() {
  std::map<std::string, uint64_t> errors;
  const int err_fd = bpf_map__fd(skel_->maps.attrib_sdk_errors);
  for (uint32_t k = 0; k < ATTRIB_KERNEL_ERRORS; ++k) {
    errors[core::kernel_error_name(k)] = percpu_sum(err_fd, k);
  }
  aggregator_->set_kernel_errors(errors);

  std::map<std::pair<uint32_t, uint32_t>, core::LayerTotals> layers;
  const int layer_fd = bpf_map__fd(skel_->maps.attrib_layers);
  for (const auto& key : map_keys<attrib_layer_key>(layer_fd, ATTRIB_MAX_LAYERS)) {
    core::LayerTotals& t = layers[{key.layer, key.batch_size}];
    for (const auto& h : percpu_values<tailcause_log2_hist>(layer_fd, &key)) {
      for (size_t i = 0; i < t.slots.size(); ++i) t.slots[i] += h.slots[i];
      t.sum_ns += h.sum;
    }
  }
  aggregator_->set_layers(layers);
}

void AttribProbe::collect_kernel_counters(core::MetricSet& out) const {
  out.add(core::metric::kEventsLost, core::MetricType::Counter,
          "Events dropped because a BPF map or ring buffer was full", {{"source", kFamily}},
          static_cast<double>(events_lost()));
  out.add(core::metric::kAttribMissedSwitches, core::MetricType::Counter,
          "Context switches of stage threads the kernel did not report to the attribution "
          "probes (recovered from the scheduler's own records)",
          {}, static_cast<double>(missed_switches()));
  out.add(core::metric::kAttribSpansInProgress, core::MetricType::Gauge,
          "Stage and recipe spans open on the node now (the attribution's scheduler programs "
          "work only while one is open in the task's process)",
          {}, static_cast<double>(spans_in_progress()));
}

void AttribProbe::collect_usdt(core::MetricSet& out) const {
  out.add(core::metric::kUsdtAttachedBinaries, core::MetricType::Gauge,
          "Executables and libraries whose tailcause USDT probes are attached", {},
          static_cast<double>(usdt_->size()));
  for (const auto& [change, n] :
       {std::pair{"attach", usdt_->attaches()}, std::pair{"release", usdt_->releases()}}) {
    out.add(core::metric::kUsdtBinaryChanges, core::MetricType::Counter,
            "Binaries whose tailcause USDT probes were attached or released (process churn)",
            {{"change", change}}, static_cast<double>(n));
  }
}

std::vector<const bpf_program*> AttribProbe::programs() const {
  std::vector<const bpf_program*> out;
  if (!skel_) return out;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (bpf_program__autoload(prog)) out.push_back(prog);
  }
  return out;
}

uint64_t AttribProbe::folded_label_values() const {
  return aggregator_ ? aggregator_->folded() : 0;
}

std::unique_ptr<ProbeFamily> make_attrib_probe() { return std::make_unique<AttribProbe>(); }

}  // namespace tailcause::probes
