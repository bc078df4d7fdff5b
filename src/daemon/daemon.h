// SPDX-License-Identifier: Apache-2.0
// `tailcause run` as an object: the probe families, the glitch pipeline and the metrics
// endpoint, driven by one loop until a stop request, with SIGHUP-style reloads in between.
// The executable routes signals to request_stop()/request_reload() (SignalRouting); a test
// runs it on a thread and calls them itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/config/config.h"
#include "daemon/glitch_pipeline.h"
#include "daemon/signals.h"
#include "daemon/startup.h"
#include "export/http_server.h"
#include "export/pod_labels.h"
#include "probes/probe_set.h"

namespace tailcause::daemon {

struct ReloadResult {
  bool applied = false;      // false: rejected, the running configuration is kept
  std::string error;         // why it was rejected
  bool listen_kept = false;  // the new one asked for another listen address (needs a restart)
  bool ui_kept = false;      // ... or another ui: section (its history is sized at start)
};

class Daemon {
 public:
  // Binds the listen address and starts the glitch pipeline's sinks (journal, breaker socket
  // and state, OTLP) before any probe is loaded, so a bad start leaves nothing behind. Throws
  // StartupError. `options` is where reload() reads the configuration again.
  Daemon(StartOptions options, Startup startup);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Attaches the families, serves /metrics, handles reload requests, and on a stop request
  // detaches everything and flushes the pipeline. Returns the exit status. Call once.
  int run();
  // Both are async-signal-safe and may come from any thread, before or during run().
  void request_stop() { flags_.stop = true; }
  void request_reload() { flags_.reload = true; }
  RunFlags& flags() { return flags_; }

  // Reads the configuration again: one that does not load is rejected and the running one
  // kept; a new listen address is refused (the old one kept); families and glitch settings
  // are re-applied (untouched families keep their programs). run() calls it for each reload
  // request; otherwise call it only while run() is not running.
  ReloadResult reload();

  // True once run() has attached the families and serves; false if `limit` passed first.
  bool wait_running(std::chrono::milliseconds limit);
  uint64_t reloads_handled() const { return reloads_handled_; }
  core::Config config() const;
  int port() const { return http_.port(); }
  probes::ProbeSet& probes() { return set_; }
  GlitchPipeline& pipeline() { return *pipeline_; }

 private:
  void shutdown();

  StartOptions options_;
  mutable std::mutex mu_;  // guards config_, running_
  core::Config config_;
  bool running_ = false;
  bool ran_ = false;
  std::condition_variable running_cv_;
  RunFlags flags_;
  std::atomic<uint64_t> reloads_handled_{0};
  // Destroyed in reverse: the endpoint (which scrapes both) first, the set last.
  probes::ProbeSet set_;
  std::unique_ptr<GlitchPipeline> pipeline_;
  exporter::PodLabeler pods_;  // namespace/pod/container on per-cgroup series
  exporter::HttpServer http_;
};

}  // namespace tailcause::daemon
