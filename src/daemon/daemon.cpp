// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "export/process_metrics.h"

namespace tailcause::daemon {

Daemon::Daemon(StartOptions options, Startup startup)
    : options_(std::move(options)),
      config_(std::move(startup.config)),
      set_(startup.features, startup.layout),
      http_([this](core::MetricSet& out) {
        set_.collect(out);
        pipeline_->collect(out);
        exporter::collect_process_metrics(out);
        pods_.apply(out);
      }) {
  pods_.configure(config_.kubernetes);
  try {
    http_.bind(core::parse_listen(config_.listen));
  } catch (const std::exception& e) {  // ConfigError, or the bind's runtime_error
    throw StartupError(e.what());
  }
  http_.api().configure({.journal_path = config_.journal.path,
                         .cache_breakdown_ratio = config_.cache_breakdown.ratio,
                         .tick_ns = uint64_t{config_.ui.tick_s} * 1'000'000'000,
                         .slots = config_.ui.history_s / config_.ui.tick_s});
  pipeline_ = std::make_unique<GlitchPipeline>(config_, PipelineOptions{});
  pipeline_->connect(set_);
  http_.api().set_stage_heatmap(pipeline_->stage_heatmap());
}

Daemon::~Daemon() { shutdown(); }

void Daemon::shutdown() {
  http_.stop();
  set_.stop_all();
  pipeline_->stop();
}

core::Config Daemon::config() const {
  std::lock_guard lock(mu_);
  return config_;
}

bool Daemon::wait_running(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  return running_cv_.wait_for(lock, limit, [this] { return running_; });
}

int Daemon::run() {
  core::Config config;
  {
    std::lock_guard lock(mu_);
    if (ran_) throw std::logic_error("Daemon::run() called twice");
    ran_ = true;
    config = config_;
  }
  spdlog::info("{}; tracepoints via {}", set_.layout().describe(),
               set_.features().tp_btf ? "BTF (tp_btf)" : "raw tracepoints");
  set_.apply(config);
  http_.start();
  spdlog::info("serving metrics on http://{}/metrics", config.listen);
  {
    std::lock_guard lock(mu_);
    running_ = true;
  }
  running_cv_.notify_all();

  while (!flags_.stop) {
    set_.poll(100);
    if (flags_.reload.exchange(false)) {
      reload();
      ++reloads_handled_;
    }
  }
  spdlog::info("stopping");
  shutdown();
  {
    std::lock_guard lock(mu_);
    running_ = false;
  }
  return 0;
}

ReloadResult Daemon::reload() {
  ReloadResult result;
  core::Config next;
  try {
    next = load_config(options_);
  } catch (const core::ConfigError& e) {
    result.error = e.what();
    spdlog::error("reload rejected, keeping the running configuration: {}", e.what());
    return result;
  }
  const core::Config current = config();
  if (next.listen != current.listen) {
    spdlog::warn("reload: listen address change ({} -> {}) needs a restart; keeping {}",
                 current.listen, next.listen, current.listen);
    next.listen = current.listen;
    result.listen_kept = true;
  }
  if (next.ui != current.ui) {
    spdlog::warn(
        "reload: a ui: change (tick_s, history_s) needs a restart; keeping tick_s={} "
        "history_s={}",
        current.ui.tick_s, current.ui.history_s);
    next.ui = current.ui;
    result.ui_kept = true;
  }
  set_.apply(next);
  pipeline_->reconfigure(next);
  pods_.configure(next.kubernetes);
  {
    std::lock_guard lock(mu_);
    config_ = next;
  }
  result.applied = true;
  spdlog::info("configuration reloaded");
  return result;
}

}  // namespace tailcause::daemon
