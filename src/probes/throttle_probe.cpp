// SPDX-License-Identifier: Apache-2.0
#include "core/host/clock.h"
#include "probes/throttle_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/record/schema.h"
#include "probes/handles.h"

namespace tailcause::probes {
namespace {

constexpr double kNsPerSecond = 1e9;
constexpr double kUsPerSecond = 1e6;

// Counter families are named without `_total`; the renderers add it.
constexpr const char* kThrottledSeconds = core::metric::kCpuThrottledSeconds;
constexpr const char* kThrottledPeriods = core::metric::kCpuThrottledPeriods;
constexpr const char* kPeriods = core::metric::kCpuPeriods;
constexpr const char* kQuota = core::metric::kCpuQuotaSeconds;
constexpr const char* kPeriod = core::metric::kCpuPeriodSeconds;
constexpr const char* kWeight = core::metric::kCpuWeight;

// A cgroup file's whole content; nullopt when it is absent (controller off, cgroup removed).
std::optional<std::string> read_small_file(const std::string& path) {
  const Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

std::string no_cpu_stats_reason(const CgroupLayout& layout) {
  if (layout.version == CgroupLayout::Version::V2) {
    return fmt::format(
        "throttle: cgroup v2 at {0} has no cpu controller enabled: enable it with "
        "`echo +cpu > {0}/cgroup.subtree_control` (on a hybrid host whose cpu controller is "
        "bound to cgroup v1, set `cgroup: {{version: v1}}` instead)",
        layout.root);
  }
  return fmt::format(
      "throttle: cgroup v1 cpu controller at {} has no cpu.stat or cpu.cfs_quota_us: the kernel "
      "was built without CFS bandwidth control (CONFIG_CFS_BANDWIDTH)",
      layout.root);
}

// Heavier throttling first, so the label budget's slots go to the cgroups that matter.
bool heavier(const core::CpuBandwidthStats& a, const core::CpuBandwidthStats& b) {
  if (a.throttled_ns != b.throttled_ns) return a.throttled_ns > b.throttled_ns;
  if (a.nr_throttled != b.nr_throttled) return a.nr_throttled > b.nr_throttled;
  return a.nr_periods > b.nr_periods;
}

}  // namespace

void ThrottleProbe::start(const ProbeContext& ctx) {
  stop();
  const CgroupLayout& layout = ctx.cgroups.layout();
  if (!layout.has_cpu_stats) throw ProbeError(no_cpu_stats_reason(layout));
  cgroups_ = &ctx.cgroups;
  signals_ = &ctx.signals;
  interval_ = std::chrono::milliseconds(ctx.config.throttle.interval_ms);
  budget_ = std::make_unique<core::LabelBudget>(ctx.config.top_k);
  folded_ = std::make_unique<core::FoldedSeries<core::CpuBandwidthStats>>(*budget_);
  started_ = true;
  // The first tick reads the baseline at once (last_read_ is long past). Not here: start() runs
  // outside the probe set's lock, and the signals belong to the collector thread.
  last_read_ = {};
  spdlog::info("throttle: reading cpu.stat under {} every {} ms", layout.describe(),
               interval_.count());
}

void ThrottleProbe::stop() {
  // Otherwise the sched family would keep sampling densely on a signal nobody updates.
  if (signals_) signals_->cgroup_throttling = false;
  signals_ = nullptr;
  started_ = false;
  cgroups_ = nullptr;
  have_previous_read_ = false;
  last_read_ = {};
  current_.clear();
  continuity_.clear();
  previous_nr_throttled_.clear();
  admitted_.clear();
  counters_.clear();
  folded_.reset();
  budget_.reset();
}

void ThrottleProbe::tick(const ProbeContext& ctx) {
  if (!started_) return;
  if (std::chrono::steady_clock::now() - last_read_ < interval_) return;
  read_now(ctx.signals);
}

std::optional<ThrottleProbe::Reading> ThrottleProbe::read_cgroup(uint64_t id,
                                                                 const std::string& name) {
  const std::string dir = cgroups_->directory(name);
  const bool v1 = cgroups_->layout().version == CgroupLayout::Version::V1;
  Reading r;
  if (auto text = read_small_file(dir + "/cpu.stat")) {
    if (auto raw = core::parse_cpu_stat(*text)) r.totals = continuity_[name].update(id, *raw);
  }
  if (v1) {
    auto quota = read_small_file(dir + "/cpu.cfs_quota_us");
    auto period = read_small_file(dir + "/cpu.cfs_period_us");
    if (quota && period) r.limit = core::parse_cfs_limit(*quota, *period);
    if (auto shares = read_small_file(dir + "/cpu.shares")) {
      r.weight = core::parse_cpu_shares_as_weight(*shares);
    }
  } else {
    if (auto max = read_small_file(dir + "/cpu.max")) r.limit = core::parse_cpu_max(*max);
    if (auto weight = read_small_file(dir + "/cpu.weight")) {
      r.weight = core::parse_cpu_weight(*weight);
    }
  }
  if (!r.totals && !r.limit && !r.weight) return std::nullopt;  // no cpu controller here
  return r;
}

void ThrottleProbe::read_now(NodeSignals& signals) {
  last_read_ = std::chrono::steady_clock::now();
  std::map<std::string, Reading> next;
  for (const auto& [id, name] : cgroups_->all()) {
    if (name == "/") continue;  // the root has no bandwidth limit of its own
    if (auto r = read_cgroup(id, name)) next.emplace(name, *r);
  }
  // Forget the continuity of vanished cgroups (bounded memory); FoldedSeries keeps what a
  // folded one had counted.
  std::erase_if(continuity_, [&](const auto& kv) { return !next.count(kv.first); });

  bool grew = false;
  std::unordered_map<std::string, uint64_t> nr_throttled;
  const uint64_t now = core::monotonic_ns();
  for (const auto& [name, r] : next) {
    if (!r.totals) continue;
    std::optional<double> quota;
    if (r.limit && r.limit->quota_us && r.limit->period_us) {
      quota = static_cast<double>(*r.limit->quota_us) / static_cast<double>(r.limit->period_us);
    }
    signals.evidence.add_throttle_sample(name, now, r.totals->nr_periods, r.totals->nr_throttled,
                                         quota);
    nr_throttled[name] = r.totals->nr_throttled;
    if (!have_previous_read_) continue;
    auto prev = previous_nr_throttled_.find(name);
    // A cgroup new since the previous read counts from zero.
    const uint64_t before = prev == previous_nr_throttled_.end() ? 0 : prev->second;
    grew = grew || r.totals->nr_throttled > before;
  }
  signals.cgroup_throttling = grew;
  previous_nr_throttled_ = std::move(nr_throttled);
  have_previous_read_ = true;
  current_ = std::move(next);
  fold();
}

void ThrottleProbe::admit_heaviest_first() {
  std::vector<const std::pair<const std::string, Reading>*> order;
  for (const auto& entry : current_) order.push_back(&entry);
  const core::CpuBandwidthStats none;
  std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    return heavier(a->second.totals.value_or(none), b->second.totals.value_or(none));
  });
  // Sticky: a name admitted (or folded) earlier keeps its place whatever its rank now.
  for (const auto* entry : order) budget_->admit(entry->first);
}

void ThrottleProbe::fold() {
  admit_heaviest_first();
  std::map<std::string, core::CpuBandwidthStats> totals;
  std::set<std::string> admitted;
  for (const auto& [name, r] : current_) {
    if (r.totals) totals[name] = *r.totals;
    if (budget_->admit(name) != core::kOtherLabel) admitted.insert(name);
  }
  counters_ = folded_->fold(totals);
  // A removed cgroup's slot goes back to the budget for the cgroups created later.
  for (const auto& name : admitted_) {
    if (!current_.count(name)) budget_->forget(name);
  }
  admitted_ = std::move(admitted);
}

void ThrottleProbe::collect(core::MetricSet& out) {
  if (!started_) return;
  using core::MetricType;
  // Every family is registered up front, so it is listed even before it has samples.
  out.family(kThrottledSeconds, MetricType::Counter,
             "Time runnable tasks of the cgroup spent throttled by its CFS bandwidth quota.",
             "seconds");
  out.family(kThrottledPeriods, MetricType::Counter,
             "CFS bandwidth periods in which the cgroup ran out of quota.");
  out.family(kPeriods, MetricType::Counter,
             "CFS bandwidth periods in which the cgroup had runnable tasks.");
  out.family(kQuota, MetricType::Gauge,
             "CPU time the cgroup may use per CFS period; absent when unlimited.", "seconds");
  out.family(kPeriod, MetricType::Gauge, "Length of the cgroup's CFS bandwidth period.", "seconds");
  out.family(kWeight, MetricType::Gauge,
             "The cgroup's CPU weight on the cgroup v2 scale (1-10000, default 100).");

  for (const auto& [name, t] : counters_) {
    const core::Labels labels{{"cgroup", name}};
    out.add(kThrottledSeconds, MetricType::Counter, "", labels, t.throttled_ns / kNsPerSecond,
            "seconds");
    out.add(kThrottledPeriods, MetricType::Counter, "", labels,
            static_cast<double>(t.nr_throttled));
    out.add(kPeriods, MetricType::Counter, "", labels, static_cast<double>(t.nr_periods));
  }
  // Gauges only for cgroups with their own series: a sum of quotas under "__other__" means
  // nothing.
  for (const auto& name : admitted_) {
    const Reading& r = current_.at(name);
    const core::Labels labels{{"cgroup", name}};
    if (r.limit && r.limit->quota_us) {
      out.add(kQuota, MetricType::Gauge, "", labels, *r.limit->quota_us / kUsPerSecond, "seconds");
    }
    if (r.limit) {
      out.add(kPeriod, MetricType::Gauge, "", labels, r.limit->period_us / kUsPerSecond, "seconds");
    }
    if (r.weight) out.add(kWeight, MetricType::Gauge, "", labels, static_cast<double>(*r.weight));
  }
}

std::unique_ptr<ProbeFamily> make_throttle_probe() { return std::make_unique<ThrottleProbe>(); }

}  // namespace tailcause::probes
