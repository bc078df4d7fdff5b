// SPDX-License-Identifier: Apache-2.0
#include "core/host/clock.h"
#include "probes/sched_probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "bpf/sched.h"
#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "probes/bpf_loader.h"
#include "sched.skel.h"

namespace tailcause::probes {
namespace {

using core::MetricType;
using Clock = std::chrono::steady_clock;

constexpr const char* kFamily = "sched";
constexpr char kPairSeparator = '\x1f';                      // cannot occur in a cgroup path
constexpr auto kUnresolvedGrace = std::chrono::seconds(60);  // CgroupNames rescans every 1 s

constexpr const char* kOffcpuStates[SCHED_OFFCPU_STATES] = {"runqueue", "io", "sleep"};

static_assert(sizeof(sched_cgroup_stats) % 8 == 0 && sizeof(sched_pair_stats) % 8 == 0 &&
                  sizeof(sched_runqlen) % 8 == 0,
              "per-CPU values are read as arrays of 8-byte aligned copies");

// BPF-shared arrays are __u64 (unsigned long long), the conversion API takes uint64_t.
template <size_t N>
std::array<uint64_t, N> widen(const __u64 (&in)[N]) {
  std::array<uint64_t, N> out;
  std::copy(std::begin(in), std::end(in), out.begin());
  return out;
}

// One cgroup's totals over all CPUs, foldable into "__other__".
struct CgroupTotals {
  std::array<uint64_t, TAILCAUSE_LOG2_SLOTS> slots{};
  uint64_t sum_ns = 0;
  std::array<uint64_t, SCHED_OFFCPU_STATES> offcpu_ns{};

  CgroupTotals& operator+=(const CgroupTotals& o) {
    core::add_slots(slots, o.slots);
    sum_ns += o.sum_ns;
    core::add_slots(offcpu_ns, o.offcpu_ns);
    return *this;
  }
  void add(const sched_cgroup_stats& s) {
    core::add_slots(slots, widen(s.runq_latency.slots));
    sum_ns += s.runq_latency.sum;
    core::add_slots(offcpu_ns, widen(s.offcpu_ns));
    offcpu_ns[SCHED_OFFCPU_RUNQUEUE] += s.runq_latency.sum;  // BPF keeps it only as the sum
  }
};

struct PairTotals {
  uint64_t preemptions = 0;
  uint64_t wait_ns = 0;
  PairTotals& operator+=(const PairTotals& o) {
    preemptions += o.preemptions;
    wait_ns += o.wait_ns;
    return *this;
  }
};

std::string pair_key(const std::string& cgroup, const std::string& by) {
  return cgroup + kPairSeparator + by;
}

bool struct_has_members(const btf* b, const char* type,
                        std::initializer_list<const char*> members) {
  const int id = btf__find_by_name_kind(b, type, BTF_KIND_STRUCT);
  if (id < 0) return false;
  const btf_type* t = btf__type_by_id(b, id);
  size_t found = 0;
  for (const char* want : members) {
    const btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
      if (strcmp(btf__name_by_offset(b, m->name_off), want) == 0) {
        ++found;
        break;
      }
    }
  }
  return found == members.size();
}

// What the BPF side can rely on in this kernel, beyond what Features says.
struct KernelFacts {
  bool task_rq = false;         // cfs_rq->rq: the run queue of a task
  bool runqueues_ksym = false;  // per-CPU `runqueues` the verifier can resolve
};

KernelFacts kernel_facts(const Features& features) {
  KernelFacts k;
  const auto parsed = start_btf(features);
  if (const btf* b = parsed.get()) k.task_rq = struct_has_members(b, "cfs_rq", {"rq"});
  k.runqueues_ksym = features.runqueues_ksym;
  return k;
}

int open_cpu_clock(int cpu, uint64_t period_ns) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period_ns;  // cpu-clock counts nanoseconds
  return static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

TAILCAUSE_SKELETON_DESTROY(sched_bpf)

struct SchedProbe::Series {
  explicit Series(size_t top_k)
      : cgroup_budget(top_k), pair_budget(top_k), cgroups(cgroup_budget), pairs(pair_budget) {}
  core::LabelBudget cgroup_budget;
  core::LabelBudget pair_budget;
  core::FoldedSeries<CgroupTotals> cgroups;
  core::FoldedSeries<PairTotals> pairs;
};

SchedProbe::SchedProbe(Options options) : options_(options) {}
SchedProbe::~SchedProbe() { stop(); }

void SchedProbe::start(const ProbeContext& ctx) {
  stop();
  cgroups_ = &ctx.cgroups;
  series_ = std::make_unique<Series>(ctx.config.top_k);
  names_.clear();
  unresolved_since_.clear();
  dense_ = false;
  // Built here and kept only when complete: a failure frees them on the way out.
  const bpf_object_open_opts opts = open_options(ctx.features);
  Handle<sched_bpf> skel(sched_bpf__open_opts(&opts));
  if (!skel) check(errno ? -errno : -EINVAL, kFamily, "open BPF object");
  skel->rodata->cgroup_v1_cpu = ctx.cgroups.layout().version == CgroupLayout::Version::V1;
  const auto& sc = ctx.config.sched;

  // Task storage is what makes the tp_btf path cheap; without it use raw_tp and a tid hash.
  const bool use_btf = ctx.features.tp_btf && ctx.features.task_storage;
  Features flavour = ctx.features;
  flavour.tp_btf = use_btf;
  select_tracepoint_flavour(skel->obj, flavour);
  bpf_map__set_autocreate(use_btf ? skel->maps.sched_task_hash : skel->maps.sched_task_store,
                          false);
  const KernelFacts kernel = kernel_facts(ctx.features);

  // Run-queue length: the per-CPU `runqueues` when the verifier can resolve it, else the
  // run queue reached from the current task; both need software perf events.
  const bool by_ksym = kernel.runqueues_ksym;
  const bool runqlen =
      ctx.features.perf_event && sc.runqlen_dense_hz > 0 && (by_ksym || kernel.task_rq);
  bpf_program__set_autoload(skel->progs.sample_runqlen_ksym, runqlen && by_ksym);
  bpf_program__set_autoload(skel->progs.sample_runqlen_task, runqlen && !by_ksym);
  if (!runqlen && !warned_no_runqlen_) {
    warned_no_runqlen_ = true;
    spdlog::warn("sched: run-queue length not sampled: {}",
                 sc.runqlen_dense_hz == 0   ? "runqlen_dense_hz is 0"
                 : !ctx.features.perf_event ? "software perf events unavailable"
                                            : "neither `runqueues` in kallsyms nor cfs_rq->rq");
  }

  check(sched_bpf__load(skel.get()), kFamily, "load BPF programs");
  check(sched_bpf__attach(skel.get()), kFamily,
        std::string("attach sched tracepoints (") + (use_btf ? "tp_btf" : "raw_tp") + ")");
  // The sampler is optional: when perf events cannot be opened the rest of the family works.
  // It starts sparse: a timer interrupt on every CPU is what it costs the node, so it fires at
  // the sparse rate rather than at the dense one with most samples dropped.
  Sampler sampler;
  if (runqlen) {
    sampler = start_runqlen_sampler(
        by_ksym ? skel->progs.sample_runqlen_ksym : skel->progs.sample_runqlen_task,
        sc.runqlen_sparse_hz);
  }
  skel_ = std::move(skel);
  sampler_ = std::move(sampler);
  spdlog::info("sched: attached ({}{})", use_btf ? "tp_btf, task storage" : "raw_tp, tid hash",
               sampler_.links.empty()
                   ? ""
                   : fmt::format(", run-queue length of {} CPUs via {} at {}/{} Hz",
                                 sampler_.links.size(), by_ksym ? "runqueues" : "current task",
                                 sc.runqlen_sparse_hz, sc.runqlen_dense_hz));
}

SchedProbe::Sampler SchedProbe::start_runqlen_sampler(bpf_program* prog, uint32_t hz) {
  std::string failure;
  Sampler sampler = attach_runqlen_sampler(prog, hz, failure);
  if (sampler.links.empty() && !warned_no_runqlen_) {
    warned_no_runqlen_ = true;
    spdlog::warn("sched: run-queue length not sampled: {}",
                 failure.empty() ? "no online CPU" : failure);
  }
  return sampler;
}

SchedProbe::Sampler SchedProbe::attach_runqlen_sampler(bpf_program* prog, uint32_t hz,
                                                       std::string& failure) {
  const uint64_t period_ns = 1000000000ull / std::max<uint32_t>(hz, 1);
  Sampler sampler;
  sampler.prog = prog;
  for (int cpu = 0; cpu < possible_cpus(); ++cpu) {
    Fd fd(open_cpu_clock(cpu, period_ns));
    if (!fd) {
      if (errno == ENODEV) continue;  // offline CPU
      failure = fmt::format("perf_event_open(cpu-clock, cpu {}): {}", cpu, strerror(errno));
      return {};
    }
    LinkHandle link(bpf_program__attach_perf_event(prog, fd.get()));
    if (!link) {
      failure = fmt::format("attach to cpu-clock on cpu {}: {}", cpu, strerror(errno));
      return {};
    }
    fd.release();  // the link owns it now and closes it when destroyed
    sampler.links.push_back(std::move(link));
    sampler.cpus.push_back(cpu);
  }
  return sampler;
}

void SchedProbe::stop() {
  sampler_ = {};
  skel_.reset();
  posted_preemptions_.clear();
  preemptions_baselined_ = false;
}

SchedProbe::PairCounts SchedProbe::read_pairs() const {
  PairCounts totals;
  const int pairs_fd = bpf_map__fd(skel_->maps.sched_preemptions);
  for (const auto& key : map_keys<sched_pair_key>(pairs_fd, SCHED_MAX_PAIRS)) {
    PostedPair& n = totals[{key.cgroup, key.by_cgroup}];
    for (const auto& v : percpu_values<sched_pair_stats>(pairs_fd, &key)) {
      n.preemptions += v.preemptions;
      n.wait_ns += v.wait_ns;
    }
  }
  const int stats_fd = bpf_map__fd(skel_->maps.sched_cgroup_stats);
  for (const uint64_t id : map_keys<uint64_t>(stats_fd, SCHED_MAX_CGROUPS)) {
    PostedPair n;
    for (const auto& v : percpu_values<sched_cgroup_stats>(stats_fd, &id)) {
      n.preemptions += v.self.preemptions;
      n.wait_ns += v.self.wait_ns;
    }
    if (n.preemptions || n.wait_ns) totals[{id, id}] = n;
  }
  return totals;
}

void SchedProbe::post_preemption_evidence(NodeSignals& signals) {
  const uint64_t now = core::monotonic_ns();
  PairCounts totals = read_pairs();
  for (const auto& [pair, n] : totals) {
    // The first read only sets the baseline: what came before attaching is not evidence. A
    // pair first seen after it began since the last read (its map entry is new), so all of
    // it is evidence: kept as a baseline, a neighbour's first second of preemptions would be
    // lost and the victim's own cgroup cited instead. A pair grows by preemptions, by the
    // wait charged to it, or both (a hog that keeps a woken task waiting never preempted it).
    const auto before = posted_preemptions_.find(pair);
    if (!preemptions_baselined_) continue;
    const PostedPair zero{};
    const PostedPair& was = before == posted_preemptions_.end() ? zero : before->second;
    if (n.preemptions <= was.preemptions && n.wait_ns <= was.wait_ns) continue;
    const auto victim = cgroup_name(pair.first), by = cgroup_name(pair.second);
    const uint64_t wait = n.wait_ns >= was.wait_ns ? n.wait_ns - was.wait_ns : 0;
    const uint64_t count = n.preemptions > was.preemptions ? n.preemptions - was.preemptions : 0;
    if (victim && by) signals.evidence.add_preemptions(*victim, *by, now, count, wait);
  }
  preemptions_baselined_ = true;
  posted_preemptions_ = std::move(totals);
}

void SchedProbe::tick(const ProbeContext& ctx) {
  if (skel_ && Clock::now() - last_evidence_ >= std::chrono::seconds(1)) {
    last_evidence_ = Clock::now();
    post_preemption_evidence(ctx.signals);
  }
  if (!skel_ || sampler_.links.empty() || dense_ == ctx.signals.cgroup_throttling) return;
  dense_ = ctx.signals.cgroup_throttling;
  // Going dense the flag changes first, going sparse the rate: a sample taken at the dense
  // rate always lands in the throttled histogram. The new rate is a new set of events, which
  // run before the old ones go. PERF_EVENT_IOC_PERIOD would change a period in place, but it
  // needs a second descriptor of each event (its link owns the first), and holding those made
  // this VM's wake-ups across CPUs slower, for a reason not found: the daemon's waits 1.6 ->
  // 3-5 us and the waking pair's own hops 12 -> 17 us, in SchedTest's ktime peer test.
  if (dense_) skel_->bss->runqlen_dense = 1;
  const auto& sc = ctx.config.sched;
  std::string failure;
  Sampler next = attach_runqlen_sampler(
      sampler_.prog, dense_ ? sc.runqlen_dense_hz : sc.runqlen_sparse_hz, failure);
  if (!next.links.empty()) {
    sampler_ = std::move(next);
  } else if (!warned_rate_) {
    warned_rate_ = true;
    spdlog::warn(
        "sched: run-queue length sampling cannot change its rate ({}); it stays as it was, "
        "with each sample in the histogram of the mode it was taken in",
        failure.empty() ? "no online CPU" : failure);
  }
  if (!dense_) skel_->bss->runqlen_dense = 0;
  spdlog::debug("sched: run-queue length sampling {}", dense_ ? "dense" : "sparse");
}

std::vector<const bpf_program*> SchedProbe::programs() const {
  return loaded_programs(skel_ ? skel_->obj : nullptr);
}

uint64_t SchedProbe::folded_label_values() const {
  return series_ ? series_->cgroup_budget.folded() + series_->pair_budget.folded() : 0;
}

// Unresolved ids are not exported: their counts show under the real name once the next rescan
// finds the directory. A cgroup removed before it could be named is forgotten unexported.
std::optional<std::string> SchedProbe::cgroup_name(uint64_t id) {
  if (auto it = names_.find(id); it != names_.end()) return it->second;
  std::string name = cgroups_->name(id);
  if (name.rfind("id:", 0) == 0) {
    unresolved_since_.try_emplace(id, Clock::now());
    return std::nullopt;
  }
  names_[id] = name;
  unresolved_since_.erase(id);
  return name;
}

void SchedProbe::collect(core::MetricSet& out) {
  if (!skel_) return;
  collect_cgroups(out);
  collect_preemptions(out);
  collect_runqlen(out);

  add_events_lost(out, kFamily, percpu_sum(bpf_map__fd(skel_->maps.sched_events_lost), 0));

  if (Clock::now() - last_gc_ >= options_.forget_removed_every) forget_removed_cgroups();
}

void SchedProbe::collect_cgroups(core::MetricSet& out) {
  const int fd = bpf_map__fd(skel_->maps.sched_cgroup_stats);
  std::map<std::string, CgroupTotals> current;
  for (uint64_t id : map_keys<uint64_t>(fd, SCHED_MAX_CGROUPS)) {
    CgroupTotals t;
    for (const auto& v : percpu_values<sched_cgroup_stats>(fd, &id)) t.add(v);
    if (const auto name = cgroup_name(id)) current[*name] += t;
  }
  for (const auto& [name, t] : series_->cgroups.fold(current)) {
    out.add_histogram(core::metric::kRunqueueLatencySeconds,
                      "Time from becoming runnable to running on a CPU, per cgroup",
                      {{"cgroup", name}}, core::log2_to_buckets(t.slots, t.sum_ns, 1e-9, 9, 34));
    for (int s = 0; s < SCHED_OFFCPU_STATES; ++s) {
      out.add(core::metric::kOffcpuSeconds, MetricType::Counter,
              "Time tasks spent off CPU: waiting in the run queue, in uninterruptible (io) "
              "or other (sleep) waits",
              {{"cgroup", name}, {"state", kOffcpuStates[s]}}, t.offcpu_ns[s] * 1e-9, "seconds");
    }
  }
}

void SchedProbe::collect_preemptions(core::MetricSet& out) {
  std::map<std::string, PairTotals> current;
  std::map<std::string, std::pair<std::string, std::string>> labels;
  for (const auto& [ids, n] : read_pairs()) {
    const auto victim = cgroup_name(ids.first), by = cgroup_name(ids.second);
    if (!victim || !by) continue;
    const std::string k = pair_key(*victim, *by);
    current[k] += PairTotals{n.preemptions, n.wait_ns};
    labels[k] = {*victim, *by};
  }
  for (const auto& [k, t] : series_->pairs.fold(current)) {
    const auto it = labels.find(k);
    const std::string victim = it != labels.end() ? it->second.first : core::kOtherLabel;
    const std::string by = it != labels.end() ? it->second.second : core::kOtherLabel;
    const core::Labels l{{"cgroup", victim}, {"by_cgroup", by}};
    out.add(core::metric::kCgroupPreemptions, MetricType::Counter,
            "Times a runnable task of cgroup was switched out for a task of by_cgroup", l,
            static_cast<double>(t.preemptions));
    out.add(core::metric::kCgroupPreemptedSeconds, MetricType::Counter,
            "Run-queue wait of cgroup's tasks charged to by_cgroup, whose tasks held the CPU "
            "longest while they waited (after a preemption or a wake-up)",
            l, t.wait_ns * 1e-9, "seconds");
  }
}

void SchedProbe::collect_runqlen(core::MetricSet& out) {
  if (sampler_.links.empty()) return;
  const uint32_t zero = 0;
  const auto per_cpu = percpu_values<sched_runqlen>(bpf_map__fd(skel_->maps.sched_runqlen), &zero);
  for (int cpu : sampler_.cpus) {
    if (cpu >= static_cast<int>(per_cpu.size())) continue;
    for (const bool throttling : {false, true}) {
      const auto& h = throttling ? per_cpu[cpu].throttled : per_cpu[cpu].hist;
      out.add_histogram(
          core::metric::kRunqueueLength,
          "Sampled number of runnable tasks on a CPU, the running one included; "
          "throttling=\"true\": the dense samples taken while a cgroup is throttled",
          {{"cpu", std::to_string(cpu)}, {"throttling", throttling ? "true" : "false"}},
          core::linear_to_buckets(widen(h.slots), h.sum), "");
    }
  }
}

// Bounded maps fill up with the ids of removed cgroups on hosts that churn containers; delete
// them (their series disappear, folded ones stay counted in "__other__").
void SchedProbe::forget_removed_cgroups() {
  last_gc_ = Clock::now();
  const int stats_fd = bpf_map__fd(skel_->maps.sched_cgroup_stats);
  const int pairs_fd = bpf_map__fd(skel_->maps.sched_preemptions);
  std::set<uint64_t> ids;
  for (uint64_t id : map_keys<uint64_t>(stats_fd, SCHED_MAX_CGROUPS)) ids.insert(id);
  const auto pairs = map_keys<sched_pair_key>(pairs_fd, SCHED_MAX_PAIRS);
  for (const auto& p : pairs) ids.insert({p.cgroup, p.by_cgroup});

  std::set<uint64_t> gone;
  std::map<std::string, int> live_ids_per_name;
  for (uint64_t id : ids) {
    if (const auto name = cgroup_name(id)) {
      struct stat st {};
      const bool exists = stat(cgroups_->directory(*name).c_str(), &st) == 0 && st.st_ino == id;
      if (exists) {
        ++live_ids_per_name[*name];
      } else {
        gone.insert(id);
      }
    } else if (Clock::now() - unresolved_since_[id] > kUnresolvedGrace) {
      gone.insert(id);
    }
  }
  if (gone.empty()) return;
  for (const auto& p : pairs) {
    if (!gone.count(p.cgroup) && !gone.count(p.by_cgroup)) continue;
    bpf_map_delete_elem(pairs_fd, &p);
    const auto victim = cgroup_name(p.cgroup), by = cgroup_name(p.by_cgroup);
    if (victim && by) series_->pair_budget.forget(pair_key(*victim, *by));
  }
  for (uint64_t id : gone) {
    bpf_map_delete_elem(stats_fd, &id);
    const auto name = cgroup_name(id);
    if (name && !live_ids_per_name.count(*name)) series_->cgroup_budget.forget(*name);
    names_.erase(id);
    unresolved_since_.erase(id);
  }
  spdlog::debug("sched: forgot {} removed cgroup(s)", gone.size());
}

std::unique_ptr<ProbeFamily> make_sched_probe() { return std::make_unique<SchedProbe>(); }

}  // namespace tailcause::probes
