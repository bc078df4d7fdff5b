// SPDX-License-Identifier: Apache-2.0
#include "probes/probe_set.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "core/host/clock.h"
#include "core/record/schema.h"
#include "probes/families.h"

namespace tailcause::probes {

using core::MetricType;

ProbeSet::ProbeSet(Features features, CgroupLayout layout)
    : features_(std::move(features)), layout_(std::move(layout)) {
  cgroups_ = std::make_unique<CgroupNames>(layout_);
  for (const auto& entry : known_families()) {
    FamilyStatus status;
    status.name = entry.name;
    families_.push_back(Running{nullptr, status});
  }
  epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
}

ProbeSet::~ProbeSet() { stop_all(); }

ProbeContext ProbeSet::context() {
  return ProbeContext{features_, config_, *cgroups_, signals_,
                      record_observer_ ? &record_observer_ : nullptr};
}

std::string ProbeSet::cgroup_name(uint64_t id) const {
  if (id == 0) return "";
  std::string name = cgroups_->name(id);
  return name.starts_with("id:") ? "" : name;
}

void ProbeSet::apply(const core::Config& config) {
  // Three steps, so that a reload never holds the lock that scrapes and the collector wait on
  // while it loads or detaches (seconds: BTF parsing, verification, uprobe grace periods):
  // plan and take out under the lock, stop and load outside it, install under it again.
  std::lock_guard applying(apply_mu_);
  Reload reload = plan_reload(config);
  stop_in_parallel(reload.stopping);
  Loaded loaded = load_families(reload.to_start);
  install(reload.to_start, loaded);
}

// Takes in `config`, and takes out the families it stops or restarts; those it keeps run on.
ProbeSet::Reload ProbeSet::plan_reload(const core::Config& config) {
  const auto& entries = known_families();
  Reload reload;
  std::lock_guard lock(mu_);
  const core::Config before = config_;
  const bool first = !configured_;
  config_ = config;
  configured_ = true;
  if (!first && !(before.cgroup == config.cgroup)) {
    // Names refer to the hierarchy: every family restarts below (same_settings is false).
    reload.old_cgroups =
        std::exchange(cgroups_, std::make_unique<CgroupNames>(detect_cgroup_layout(config.cgroup)));
    layout_ = cgroups_->layout();
  }
  set_bpf_stats(config.bpf_stats);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& entry = entries[i];
    Running& r = families_[i];
    const bool want = entry.enabled(config);
    const bool keep = !first && r.family && want && entry.same_settings(before, config);
    if (keep) continue;
    if (r.family) reload.stopping.push_back(std::move(r.family));
    r.status.enabled = want;
    r.status.attached = false;
    r.status.error = want ? "" : "disabled in configuration";
    if (want) reload.to_start.push_back(i);
  }
  rebuild_epoll();  // the collector must not wait on rings that are going away
  return reload;
}

ProbeSet::Loaded ProbeSet::load_families(const std::vector<size_t>& to_start) {
  const auto& entries = known_families();
  // The BTF is parsed once for all the loaders (the features probe's copy at the first start),
  // and dropped when they are done: several MB the daemon does not need between starts. Only
  // apply() touches it.
  if (!to_start.empty() && features_.btf && !features_.parsed_btf.get()) {
    features_.parsed_btf.set(parse_btf(features_.btf_path));
  }

  // Families load in parallel, one loader per CPU: each load is mostly BTF parsing and
  // verification, so the first scrape waits for the slowest loader rather than the sum, while
  // the memory peak (a parsed kernel BTF per loader) stays bounded by the CPU count. The context
  // refers to config_ and cgroups_, which only apply() changes, and apply() is serialised.
  const ProbeContext ctx = context();
  Loaded loaded{std::vector<std::unique_ptr<ProbeFamily>>(entries.size()),
                std::vector<std::string>(entries.size())};
  std::vector<std::thread> loaders;
  std::atomic<size_t> next{0};
  const size_t n_loaders =
      std::min<size_t>(to_start.size(), std::max(1u, std::thread::hardware_concurrency()));
  for (size_t w = 0; w < n_loaders; ++w) {
    loaders.emplace_back([&] {
      for (size_t k = next++; k < to_start.size(); k = next++) {
        const size_t i = to_start[k];
        auto family = entries[i].make();
        try {
          family->start(ctx);
          loaded.families[i] = std::move(family);
        } catch (const std::exception& e) {
          loaded.errors[i] = e.what();
        }
      }
    });
  }
  for (auto& t : loaders) t.join();
  // Loading parses the kernel BTF again inside libbpf, once per object, on the loader threads:
  // tens of MB freed by now, but glibc keeps freed pages of its per-thread arenas resident.
  // Hand them back, or they stay in the daemon's RSS for its whole life.
  features_.parsed_btf.drop();
  if (!to_start.empty()) malloc_trim(0);
  return loaded;
}

// Puts the families that started in place and reports those that did not.
void ProbeSet::install(const std::vector<size_t>& to_start, Loaded& loaded) {
  const auto& entries = known_families();
  std::lock_guard lock(mu_);
  for (size_t i : to_start) {
    Running& r = families_[i];
    if (loaded.families[i]) {
      r.family = std::move(loaded.families[i]);
      r.status.attached = true;
      ++r.status.generation;
      spdlog::info("probe {}: attached", entries[i].name);
    } else {
      r.status.error = loaded.errors[i];
      spdlog::warn("probe {}: not attached: {}", entries[i].name, loaded.errors[i]);
    }
  }
  rebuild_epoll();
}

void ProbeSet::stop_in_parallel(std::vector<std::unique_ptr<ProbeFamily>>& families) {
  // All at once: closing links waits in the kernel (uprobes: grace periods), which must not add
  // up family after family.
  std::vector<std::thread> stoppers;
  for (auto& f : families) {
    stoppers.emplace_back([&f] {
      const std::string name = f->name();
      f->stop();
      f.reset();
      spdlog::info("probe {}: detached", name);
    });
  }
  for (auto& t : stoppers) t.join();
  families.clear();
}

void ProbeSet::stop_all() {
  // Taken out under the lock and stopped outside it, so scrapes go on meanwhile; after any
  // apply() in flight, which would otherwise install families after this returned.
  std::lock_guard applying(apply_mu_);
  std::vector<std::unique_ptr<ProbeFamily>> stopping;
  {
    std::lock_guard lock(mu_);
    for (auto& r : families_) {
      if (r.family) stopping.push_back(std::move(r.family));
      r.status.attached = false;
    }
    rebuild_epoll();
  }
  stop_in_parallel(stopping);
}

void ProbeSet::rebuild_epoll() {
  // The same epoll descriptor throughout: the collector may be waiting on it right now.
  for (const int fd : polled_fds_) epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  polled_fds_.clear();
  for (size_t i = 0; i < families_.size(); ++i) {
    if (!families_[i].family) continue;
    const int fd = families_[i].family->event_fd();
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) == 0) polled_fds_.push_back(fd);
  }
}

void ProbeSet::poll(int timeout_ms) {
  epoll_event events[8];
  const int n = epoll_wait(epoll_fd_.get(), events, 8, timeout_ms);
  std::lock_guard lock(mu_);
  for (int i = 0; i < n; ++i) {
    const auto idx = events[i].data.u64;
    if (idx < families_.size() && families_[idx].family) families_[idx].family->consume();
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_tick_ >= std::chrono::milliseconds(100)) {
    last_tick_ = now;
    const ProbeContext ctx = context();
    for (auto& r : families_) {
      if (r.family) r.family->tick(ctx);
    }
    signals_.evidence.expire(core::monotonic_ns());
  }
}

void ProbeSet::set_bpf_stats(bool on) {
  if (on && !stats_fd_) {
    stats_fd_.reset(bpf_enable_stats(BPF_STATS_RUN_TIME));
    if (!stats_fd_) spdlog::warn("bpf_stats: kernel refused run-time statistics");
  } else if (!on) {
    stats_fd_.reset();
  }
}

void ProbeSet::collect(core::MetricSet& out) {
  std::lock_guard lock(mu_);
  for (auto& r : families_) {
    if (r.family) r.family->collect(out);
  }
  for (const auto& r : families_) {
    out.add(core::metric::kProbeAttached, MetricType::Gauge,
            "Whether a probe family is loaded and attached (1) or not (0).",
            {{"probe", r.status.name}}, r.status.attached ? 1 : 0);
  }
  // Run time per program, where the kernel accounts it (bpf_stats or kernel.bpf_stats_enabled).
  for (const auto& r : families_) {
    if (!r.family) continue;
    for (const bpf_program* prog : r.family->programs()) {
      const int fd = bpf_program__fd(prog);
      if (fd < 0) continue;
      bpf_prog_info info{};
      __u32 len = sizeof info;
      if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0 || info.run_cnt == 0) continue;
      const core::Labels labels{{"probe", r.status.name}, {"program", bpf_program__name(prog)}};
      out.add(core::metric::kBpfProgramRunSeconds, MetricType::Counter,
              "Time the kernel spent running a BPF program (needs bpf_stats).", labels,
              static_cast<double>(info.run_time_ns) * 1e-9, "seconds");
      out.add(core::metric::kBpfProgramRuns, MetricType::Counter,
              "Times the kernel ran a BPF program (needs bpf_stats).", labels,
              static_cast<double>(info.run_cnt));
    }
  }
  uint64_t folded = 0;
  for (const auto& r : families_) {
    if (r.family) folded += r.family->folded_label_values();
  }
  out.add(core::metric::kLabelValuesFolded, MetricType::Gauge,
          "Distinct label values folded into __other__ by the top-K cardinality bound.", {},
          static_cast<double>(folded));
  static const std::string kernel = [] {
    utsname u{};
    uname(&u);
    return std::string(u.release);
  }();
  out.add(core::metric::kBuildInfo, MetricType::Gauge, "Build and host information.",
          {{"version", TAILCAUSE_VERSION_STRING},
           {"libbpf", fmt::format("{}.{}", libbpf_major_version(), libbpf_minor_version())},
           {"kernel", kernel},
           {"cgroup", layout_.version == CgroupLayout::Version::V1 ? "v1" : "v2"},
           {"tracepoints", features_.tp_btf ? "tp_btf" : "raw_tp"}},
          1);
}

std::vector<FamilyStatus> ProbeSet::status() const {
  std::lock_guard lock(mu_);
  std::vector<FamilyStatus> out;
  for (const auto& r : families_) out.push_back(r.status);
  return out;
}

std::vector<RecipeDetail> ProbeSet::recipe_details() const {
  std::lock_guard lock(mu_);
  std::vector<RecipeDetail> out;
  for (const auto& r : families_) {
    if (!r.family) continue;
    auto details = r.family->recipe_details();
    out.insert(out.end(), details.begin(), details.end());
  }
  return out;
}

}  // namespace tailcause::probes
