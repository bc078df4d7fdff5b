// `tailcause run`: the daemon. Probes are attached after the configuration, privileges, BTF
// and listen address have all been checked, so a bad start leaves nothing behind.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

#include "cli/commands.h"
#include "cli/glitch_pipeline.h"
#include "cli/startup.h"
#include "export/http_server.h"
#include "probes/probe_set.h"

namespace tailcause::cli {
namespace {

std::atomic<bool> stop_requested{false};
std::atomic<bool> reload_requested{false};

void on_signal(int sig) {
  if (sig == SIGHUP) {
    reload_requested = true;
  } else {
    stop_requested = true;
  }
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGHUP, SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// A bad new configuration is rejected and the running one kept.
void reload(const CommonOptions& options, core::Config& current, probes::ProbeSet& set,
            GlitchPipeline& pipeline) {
  core::Config next;
  try {
    next = load_config(options);
  } catch (const core::ConfigError& e) {
    spdlog::error("reload rejected, keeping the running configuration: {}", e.what());
    return;
  }
  if (next.listen != current.listen) {
    spdlog::warn("reload: listen address change ({} -> {}) needs a restart; keeping {}",
                 current.listen, next.listen, current.listen);
    next.listen = current.listen;
  }
  set.apply(next);
  pipeline.reconfigure(next);
  current = next;
  spdlog::info("configuration reloaded");
}

}  // namespace

int run_daemon(const CommonOptions& options) {
  auto startup = prepare(options);
  if (!startup) return 2;
  core::Config config = startup->config;

  probes::ProbeSet set(startup->features, startup->layout);
  std::unique_ptr<GlitchPipeline> pipeline;
  exporter::HttpServer http([&set, &pipeline](core::MetricSet& out) {
    set.collect(out);
    pipeline->collect(out);
  });
  try {
    http.bind(core::parse_listen(config.listen));
    // Journal, breaker socket and state, OTLP: checked before any probe is loaded.
    pipeline = std::make_unique<GlitchPipeline>(config, PipelineOptions{});
  } catch (const std::exception& e) {
    fmt::print(stderr, "tailcause: {}\n", e.what());
    return 2;
  }
  pipeline->connect(set);
  install_signal_handlers();
  spdlog::info("{}; tracepoints via {}", startup->layout.describe(),
               startup->features.tp_btf ? "BTF (tp_btf)" : "raw tracepoints");
  set.apply(config);
  http.start();
  spdlog::info("serving metrics on http://{}/metrics", config.listen);

  while (!stop_requested) {
    set.poll(100);
    if (reload_requested.exchange(false)) reload(options, config, set, *pipeline);
  }
  spdlog::info("stopping");
  http.stop();
  set.stop_all();
  pipeline->stop();
  return 0;
}

}  // namespace tailcause::cli
