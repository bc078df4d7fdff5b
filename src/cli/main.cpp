// SPDX-License-Identifier: Apache-2.0
// tailcause: why the slow AI-agent requests were slow, from the kernel up.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <tuple>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/config/duration.h"
#include "export/journal.h"

namespace {

constexpr uint64_t kSecondNs = 1'000'000'000;

}  // namespace

int main(int argc, char** argv) {
  using namespace tailcause::cli;
  CLI::App app{"tailcause: kernel causes of AI-agent and LLM-inference tail latency"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tailcause ") + TAILCAUSE_VERSION_STRING);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  CommonOptions options;
  auto add_common = [&](CLI::App* cmd) {
    cmd->add_option("--config,-c", options.config_path, "YAML configuration file")
        ->check(CLI::ExistingFile);
    cmd->add_option("--btf", options.btf, "BTF file for kernels without /sys/kernel/btf/vmlinux");
  };

  auto add_attrib_filters = [&](CLI::App* cmd) {
    cmd->add_option("--pid", options.pid, "Attach the SDK's USDT probes in this process only")
        ->check(CLI::Range(1, 4194304));
    cmd->add_option("--binary", options.binary,
                    "Attach the SDK's USDT probes in this executable or library only")
        ->check(CLI::ExistingFile);
  };

  auto* run = app.add_subcommand("run", "Run the daemon: attach probes, serve /metrics");
  add_common(run);
  run->add_option("--listen,-l", options.listen,
                  "HOST:PORT for the metrics endpoint (default 0.0.0.0:9436)")
      ->check(listen_address());
  add_attrib_filters(run);

  bool json = false;
  auto* probes =
      app.add_subcommand("probes", "Show kernel features and each probe family's status");
  add_common(probes);
  probes->add_flag("--json", json, "Machine-readable output");

  auto* diagnose = app.add_subcommand(
      "diagnose", "Collect for a while, then report tenants, stages, glitches and their causes");
  add_common(diagnose);
  add_attrib_filters(diagnose);
  DiagnoseOptions diagnose_options;
  diagnose
      ->add_option("--duration,-d", diagnose_options.duration,
                   "How long to collect: 30s, 5m, 1h30m ... (Ctrl-C stops early)")
      ->check(duration_within(kSecondNs, tailcause::core::kMaxDurationNs, "at least 1s"))
      ->capture_default_str();
  diagnose->add_flag("--json", diagnose_options.json, "Machine-readable output on stdout");

  auto* demo = app.add_subcommand(
      "demo", "Run the example agent with a fault and show what tailcause finds");
  add_common(demo);
  DemoOptions demo_options;
  demo->add_option("--fault,-f", demo_options.fault, "The fault injected on tenant ta")
      ->check(CLI::IsMember({"quota", "hog", "cold-cache", "slow-peer", "lock", "none"}))
      ->capture_default_str();
  demo->add_option("--duration,-d", demo_options.duration, "How long the agent serves requests")
      ->check(duration_within(kSecondNs, 3600 * kSecondNs, "between 1s and 1h"))
      ->capture_default_str();
  demo->add_option("--agent", demo_options.agent,
                   "The example agent (default: examples/rag-agent next to tailcause, or PATH)")
      ->check(executable_file());
  demo->add_flag("--json", demo_options.json, "Machine-readable output on stdout");

  auto* glitches = app.add_subcommand("glitches", "List the journal's glitches and explain them");
  GlitchesOptions glitches_options;
  std::string since, tenant, stage;
  glitches
      ->add_option("--config,-c", glitches_options.config_path,
                   "YAML configuration file (for journal.path)")
      ->check(CLI::ExistingFile);
  glitches->add_option("--journal", glitches_options.journal_path,
                       "The journal file (default: journal.path of the configuration)");
  auto* since_opt =
      glitches->add_option("--since", since, "Only the last DURATION: 30s, 5m, 2h, 1d, 1h30m")
          ->check(duration_within(1, tailcause::core::kMaxDurationNs, "more than zero"));
  auto* tenant_opt = glitches->add_option("--tenant", tenant, "Only this tenant")
                         ->check(non_empty("tenant name", "omit --tenant for all tenants"));
  auto* stage_opt = glitches->add_option("--stage", stage, "Only this stage (or \"request\")")
                        ->check(non_empty("stage name", "omit --stage for all stages"));
  glitches->add_option("--limit,-n", glitches_options.limit, "At most this many, newest first")
      ->check(integer_within(1, tailcause::exporter::Journal::kMaxQueryLimit, "limit"))
      ->capture_default_str();
  glitches->add_flag("--json", glitches_options.json, "A JSON array on stdout");
  auto* incidents_flag = glitches->add_flag(
      "--incidents", glitches_options.incidents,
      "The incidents (sustained slowdowns over a stage's learned baseline) instead");
  std::string show_trace;
  auto* show_opt =
      glitches
          ->add_option("--show", show_trace,
                       "One glitched request as a tree of threads and waits: who waited on whom, "
                       "for how long and why (TRACE: its trace id, or a unique prefix of 8+ hex "
                       "digits)")
          ->transform(trace_id_prefix())
          ->excludes(incidents_flag, since_opt, tenant_opt, stage_opt);

  TopOptions top_options;
  auto* top = app.add_subcommand("top", "A live view of tenants and stages over the JSON API");
  top->add_option("--url", top_options.url, "The daemon's endpoint")
      ->check(api_url())
      ->capture_default_str();
  top->add_option("--sort", top_options.sort, "Initial sort (keys p, m, g, n, t change it)")
      ->check(CLI::IsMember({"p99", "p50", "glitches", "count", "tenant"}))
      ->capture_default_str();
  top->add_option("--interval", top_options.interval_ms, "Refresh every MS milliseconds")
      ->check(CLI::Range(200, 60000))
      ->capture_default_str();
  top->add_flag("--once", top_options.once, "Print one frame and exit (also when not a terminal)");
  top->add_flag("--no-color", top_options.no_color, "No colour (also with NO_COLOR set)");
  HeatmapOptions heatmap_options;
  auto* heatmap = app.add_subcommand("heatmap", "Write one of the web UI's heatmaps to a file");
  heatmap->add_option("--url", heatmap_options.url, "The daemon's endpoint")
      ->check(api_url())
      ->capture_default_str();
  heatmap
      ->add_option("--metric,-m", heatmap_options.metric,
                   "stage:NAME (time x latency), tcp_rtt, tcp_duration (pair x hour), layers")
      ->check(heatmap_metric())
      ->required();
  heatmap->add_option("--out,-o", heatmap_options.out, "FILE.svg or FILE.png")
      ->check(file_suffix({".svg", ".png"}))
      ->required();
  heatmap
      ->add_option("--font", heatmap_options.font,
                   "Font file for a PNG's labels (default: fontconfig's sans-serif)")
      ->check(CLI::ExistingFile);
  auto* instrument = app.add_subcommand(
      "instrument", "Run a Python agent with its libraries' calls as stages: -- python3 agent.py");
  InstrumentOptions instrument_options;
  for (auto [flag, into, help] :
       {std::tuple{"--entry", &instrument_options.entry, "Each call of this function is a request"},
        {"--wsgi", &instrument_options.wsgi, "MODULE:APP, each HTTP request a request"},
        {"--asgi", &instrument_options.asgi, "MODULE:APP, each HTTP request a request"},
        {"--tenant-arg", &instrument_options.tenant_arg, "The entry's argument naming the tenant"},
        {"--tenant-header", &instrument_options.tenant_header, "The request header naming it"},
        {"--tenant-env", &instrument_options.tenant_env, "The environment variable naming it"},
        {"--agent", &instrument_options.agent, "The agent name (default: the script's)"},
        {"--sdk-python", &instrument_options.sdk_python, "The SDK's Python package directory"}}) {
    instrument->add_option(flag, *into, help);
  }
  instrument->add_option("command", instrument_options.command, "python3 agent.py ARGS...")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every bad flag exits 2, like the other start-up errors.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (since_opt->count()) glitches_options.since = since;
  if (tenant_opt->count()) glitches_options.tenant = tenant;
  if (stage_opt->count()) glitches_options.stage = stage;
  if (show_opt->count()) glitches_options.show = show_trace;
  // Logs go to stderr so that stdout stays clean for command output (probes --json).
  spdlog::set_default_logger(spdlog::stderr_color_mt("tailcause"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Exit 2 for everything that stops a start: bad flags (above) and StartupError (a bad
  // configuration, missing privileges or BTF, an address or file that cannot be used).
  try {
    if (*run) return run_daemon(options);
    if (*probes) return print_probes(options, json);
    if (*diagnose) return tailcause::cli::diagnose(options, diagnose_options);
    if (*demo) return run_demo(options, demo_options);
    if (*glitches) return list_glitches(glitches_options);
    if (*top) return run_top(top_options);
    if (*heatmap) return write_heatmap(heatmap_options);
    if (*instrument) return run_instrument(instrument_options);
  } catch (const tailcause::daemon::StartupError& e) {
    fmt::print(stderr, "tailcause: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 1;
}
