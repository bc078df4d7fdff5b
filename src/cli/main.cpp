// infertrace: why the slow AI-agent requests were slow, from the kernel up.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"infertrace: kernel causes of AI-agent and LLM-inference tail latency"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("infertrace ") + INFERTRACE_VERSION_STRING);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  infertrace::cli::CommonOptions options;
  auto add_common = [&](CLI::App* cmd) {
    cmd->add_option("--config,-c", options.config_path, "YAML configuration file")
        ->check(CLI::ExistingFile);
    cmd->add_option("--btf", options.btf,
                    "BTF file for kernels without /sys/kernel/btf/vmlinux");
  };

  auto* run = app.add_subcommand("run", "Run the daemon: attach probes, serve /metrics");
  add_common(run);
  run->add_option("--listen,-l", options.listen,
                  "HOST:PORT for the metrics endpoint (default 0.0.0.0:9436)");
  run->add_option("--pid", options.pid, "Attach the SDK's USDT probes in this process only")
      ->check(CLI::Range(1, 4194304));
  run->add_option("--binary", options.binary,
                  "Attach the SDK's USDT probes in this executable or library only")
      ->check(CLI::ExistingFile);

  bool json = false;
  auto* probes = app.add_subcommand("probes", "Show kernel features and each probe family's status");
  add_common(probes);
  probes->add_flag("--json", json, "Machine-readable output");

  CLI11_PARSE(app, argc, argv);
  // Logs go to stderr so that stdout stays clean for command output (probes --json).
  spdlog::set_default_logger(spdlog::stderr_color_mt("infertrace"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  if (*run) return infertrace::cli::run_daemon(options);
  if (*probes) return infertrace::cli::print_probes(options, json);
  return 1;
}
