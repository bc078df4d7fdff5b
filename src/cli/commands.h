// SPDX-License-Identifier: Apache-2.0
// Sub-commands of the tailcause executable. Each returns the process exit code; flags arrive
// validated (CLI11, see validators.h), and a start-up failure is thrown as daemon::StartupError,
// which main turns into one line and exit 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/startup.h"

namespace tailcause::cli {

using CommonOptions = daemon::StartOptions;

int run_daemon(const CommonOptions& options);
int print_probes(const CommonOptions& options, bool json);

// `glitches`: 0 listed (possibly none), 1 no journal or it cannot be read, 2 bad query.
struct GlitchesOptions {
  std::string config_path;           // journal.path comes from here (or the defaults) ...
  std::string journal_path;          // ... unless given
  std::optional<std::string> since;  // a duration ("1h"); none: all
  std::optional<std::string> tenant, stage;
  int limit = 100;
  bool json = false;
  bool incidents = false;  // the incidents (sustained slowdowns) instead of the glitches
  // One glitched request's propagation tree instead: a trace id or a unique prefix of it.
  std::optional<std::string> show;
};
int list_glitches(const GlitchesOptions& options);

// `diagnose`: 0 reported, 2 bad flags or start-up failure.
struct DiagnoseOptions {
  std::string duration = "30s";
  bool json = false;
};
int diagnose(const CommonOptions& options, const DiagnoseOptions& diagnose_options);

// `demo`: 0 ran, 1 the agent failed, 2 bad flags or start-up failure.
struct DemoOptions {
  std::string fault = "quota";  // quota | hog | cold-cache | slow-peer | lock | none
  std::string duration = "20s";
  std::string agent;  // empty: rag-agent next to this executable, or in PATH
  bool json = false;
};
int run_demo(const CommonOptions& options, const DemoOptions& demo_options);

// `top`: 0 quit, 1 the endpoint could not be read (--once / not a terminal), 2 bad flags.
struct TopOptions {
  std::string url = "http://127.0.0.1:9436";
  std::string sort = "p99";  // p99 | p50 | glitches | count | tenant
  int interval_ms = 2000;
  bool once = false, no_color = false;
};
int run_top(const TopOptions& options);

// `heatmap`: 0 written, 1 the endpoint or the file failed, 2 bad flags.
struct HeatmapOptions {
  std::string url = "http://127.0.0.1:9436";
  std::string metric;  // stage:NAME | tcp_rtt | tcp_duration | layers
  std::string out;     // FILE.svg | FILE.png
  std::string font;    // the PNG's font file; empty: fontconfig's sans-serif
};
int write_heatmap(const HeatmapOptions& options);
// `instrument`: execs a Python agent under tailcause.instrument; returns only on failure
// (2 bad command or no SDK package, 127 cannot exec).
struct InstrumentOptions {
  std::string entry, wsgi, asgi, tenant_arg, tenant_header, tenant_env, agent, sdk_python;
  std::vector<std::string> command;  // python3 agent.py ARGS...
};
int run_instrument(const InstrumentOptions& options);

}  // namespace tailcause::cli
