// SPDX-License-Identifier: Apache-2.0
// Each sub-command's flags, one add_X_command() per sub-command (command_flags.h). The options
// live in the action's closure, which main keeps until the process exits.
#include "cli/command_flags.h"

#include <memory>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/config/duration.h"
#include "export/journal.h"

namespace tailcause::cli {
namespace {

constexpr uint64_t kSecondNs = 1'000'000'000;

// --config and --btf, which every sub-command that starts the probes takes.
void add_common(CLI::App* cmd, CommonOptions& options) {
  cmd->add_option("--config,-c", options.config_path, "YAML configuration file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--btf", options.btf, "BTF file for kernels without /sys/kernel/btf/vmlinux");
}

void add_attrib_filters(CLI::App* cmd, CommonOptions& options) {
  cmd->add_option("--pid", options.pid, "Attach the SDK's USDT probes in this process only")
      ->check(CLI::Range(1, 4194304));
  cmd->add_option("--binary", options.binary,
                  "Attach the SDK's USDT probes in this executable or library only")
      ->check(CLI::ExistingFile);
}

// The glitches filters held as text until the parse, since only a flag that was given sets its
// std::optional in GlitchesOptions.
struct GlitchesFlags {
  GlitchesOptions options;
  std::string since, tenant, stage, show;
  CLI::Option *since_opt = nullptr, *tenant_opt = nullptr, *stage_opt = nullptr,
              *show_opt = nullptr;

  const GlitchesOptions& parsed() {
    if (since_opt->count()) options.since = since;
    if (tenant_opt->count()) options.tenant = tenant;
    if (stage_opt->count()) options.stage = stage;
    if (show_opt->count()) options.show = show;
    return options;
  }
};

// --since, --tenant, --stage: which glitches are listed.
void add_glitches_filters(CLI::App* glitches, GlitchesFlags& f) {
  f.since_opt =
      glitches->add_option("--since", f.since, "Only the last DURATION: 30s, 5m, 2h, 1d, 1h30m")
          ->check(duration_within(1, core::kMaxDurationNs, "more than zero"));
  f.tenant_opt = glitches->add_option("--tenant", f.tenant, "Only this tenant")
                     ->check(non_empty("tenant name", "omit --tenant for all tenants"));
  f.stage_opt = glitches->add_option("--stage", f.stage, "Only this stage (or \"request\")")
                    ->check(non_empty("stage name", "omit --stage for all stages"));
}

}  // namespace

SubCommand add_run_command(CLI::App& app) {
  auto options = std::make_shared<CommonOptions>();
  auto* run = app.add_subcommand("run", "Run the daemon: attach probes, serve /metrics");
  add_common(run, *options);
  run->add_option("--listen,-l", options->listen,
                  "HOST:PORT for the metrics endpoint (default 0.0.0.0:9436)")
      ->check(listen_address());
  add_attrib_filters(run, *options);
  return {run, [options] { return run_daemon(*options); }};
}

SubCommand add_probes_command(CLI::App& app) {
  auto options = std::make_shared<CommonOptions>();
  auto json = std::make_shared<bool>(false);
  auto* probes =
      app.add_subcommand("probes", "Show kernel features and each probe family's status");
  add_common(probes, *options);
  probes->add_flag("--json", *json, "Machine-readable output");
  return {probes, [options, json] { return print_probes(*options, *json); }};
}

SubCommand add_diagnose_command(CLI::App& app) {
  auto options = std::make_shared<std::pair<CommonOptions, DiagnoseOptions>>();
  auto& [common, diagnose_options] = *options;
  auto* diagnose = app.add_subcommand(
      "diagnose", "Collect for a while, then report tenants, stages, glitches and their causes");
  add_common(diagnose, common);
  add_attrib_filters(diagnose, common);
  diagnose
      ->add_option("--duration,-d", diagnose_options.duration,
                   "How long to collect: 30s, 5m, 1h30m ... (Ctrl-C stops early)")
      ->check(duration_within(kSecondNs, core::kMaxDurationNs, "at least 1s"))
      ->capture_default_str();
  diagnose->add_flag("--json", diagnose_options.json, "Machine-readable output on stdout");
  return {diagnose, [options] { return cli::diagnose(options->first, options->second); }};
}

SubCommand add_demo_command(CLI::App& app) {
  auto options = std::make_shared<std::pair<CommonOptions, DemoOptions>>();
  auto& [common, demo_options] = *options;
  auto* demo = app.add_subcommand(
      "demo", "Run the example agent with a fault and show what tailcause finds");
  add_common(demo, common);
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
  return {demo, [options] { return run_demo(options->first, options->second); }};
}

SubCommand add_glitches_command(CLI::App& app) {
  auto flags = std::make_shared<GlitchesFlags>();
  GlitchesOptions& options = flags->options;
  auto* glitches = app.add_subcommand("glitches", "List the journal's glitches and explain them");
  glitches
      ->add_option("--config,-c", options.config_path, "YAML configuration file (for journal.path)")
      ->check(CLI::ExistingFile);
  glitches->add_option("--journal", options.journal_path,
                       "The journal file (default: journal.path of the configuration)");
  add_glitches_filters(glitches, *flags);
  glitches->add_option("--limit,-n", options.limit, "At most this many, newest first")
      ->check(integer_within(1, exporter::Journal::kMaxQueryLimit, "limit"))
      ->capture_default_str();
  glitches->add_flag("--json", options.json, "A JSON array on stdout");
  auto* incidents_flag = glitches->add_flag(
      "--incidents", options.incidents,
      "The incidents (sustained slowdowns over a stage's learned baseline) instead");
  flags->show_opt =
      glitches
          ->add_option("--show", flags->show,
                       "One glitched request as a tree of threads and waits: who waited on whom, "
                       "for how long and why (TRACE: its trace id, or a unique prefix of 8+ hex "
                       "digits)")
          ->transform(trace_id_prefix())
          ->excludes(incidents_flag, flags->since_opt, flags->tenant_opt, flags->stage_opt);
  return {glitches, [flags] { return list_glitches(flags->parsed()); }};
}

SubCommand add_top_command(CLI::App& app) {
  auto options = std::make_shared<TopOptions>();
  auto* top = app.add_subcommand("top", "A live view of tenants and stages over the JSON API");
  top->add_option("--url", options->url, "The daemon's endpoint")
      ->check(api_url())
      ->capture_default_str();
  top->add_option("--sort", options->sort, "Initial sort (keys p, m, g, n, t change it)")
      ->check(CLI::IsMember({"p99", "p50", "glitches", "count", "tenant"}))
      ->capture_default_str();
  top->add_option("--interval", options->interval_ms, "Refresh every MS milliseconds")
      ->check(CLI::Range(200, 60000))
      ->capture_default_str();
  top->add_flag("--once", options->once, "Print one frame and exit (also when not a terminal)");
  top->add_flag("--no-color", options->no_color, "No colour (also with NO_COLOR set)");
  return {top, [options] { return run_top(*options); }};
}

SubCommand add_heatmap_command(CLI::App& app) {
  auto options = std::make_shared<HeatmapOptions>();
  auto* heatmap = app.add_subcommand("heatmap", "Write one of the web UI's heatmaps to a file");
  heatmap->add_option("--url", options->url, "The daemon's endpoint")
      ->check(api_url())
      ->capture_default_str();
  heatmap
      ->add_option("--metric,-m", options->metric,
                   "stage:NAME (time x latency), tcp_rtt, tcp_duration (pair x hour), layers")
      ->check(heatmap_metric())
      ->required();
  heatmap->add_option("--out,-o", options->out, "FILE.svg or FILE.png")
      ->check(file_suffix({".svg", ".png"}))
      ->required();
  heatmap
      ->add_option("--font", options->font,
                   "Font file for a PNG's labels (default: fontconfig's sans-serif)")
      ->check(CLI::ExistingFile);
  return {heatmap, [options] { return write_heatmap(*options); }};
}

SubCommand add_instrument_command(CLI::App& app) {
  auto options = std::make_shared<InstrumentOptions>();
  auto* instrument = app.add_subcommand(
      "instrument", "Run a Python agent with its libraries' calls as stages: -- python3 agent.py");
  for (auto [flag, into, help] :
       {std::tuple{"--entry", &options->entry, "Each call of this function is a request"},
        {"--wsgi", &options->wsgi, "MODULE:APP, each HTTP request a request"},
        {"--asgi", &options->asgi, "MODULE:APP, each HTTP request a request"},
        {"--tenant-arg", &options->tenant_arg, "The entry's argument naming the tenant"},
        {"--tenant-header", &options->tenant_header, "The request header naming it"},
        {"--tenant-env", &options->tenant_env, "The environment variable naming it"},
        {"--agent", &options->agent, "The agent name (default: the script's)"},
        {"--sdk-python", &options->sdk_python, "The SDK's Python package directory"}}) {
    instrument->add_option(flag, *into, help);
  }
  instrument->add_option("command", options->command, "python3 agent.py ARGS...")->required();
  return {instrument, [options] { return run_instrument(*options); }};
}

}  // namespace tailcause::cli
