// SPDX-License-Identifier: Apache-2.0
// tailcause: why the slow AI-agent requests were slow, from the kernel up.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "cli/command_flags.h"
#include "daemon/startup.h"

namespace {

// Logs go to stderr so that stdout stays clean for command output (probes --json).
void start_logging(const std::string& level) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("tailcause"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

// Exit 2 for everything that stops a start: bad flags (in main) and StartupError (a bad
// configuration, missing privileges or BTF, an address or file that cannot be used).
int run_given(const std::vector<tailcause::cli::SubCommand>& commands) {
  try {
    for (const auto& command : commands) {
      if (*command.app) return command.run();
    }
  } catch (const tailcause::daemon::StartupError& e) {
    fmt::print(stderr, "tailcause: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tailcause::cli;
  CLI::App app{"tailcause: kernel causes of AI-agent and LLM-inference tail latency"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tailcause ") + TAILCAUSE_VERSION_STRING);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  const std::vector<SubCommand> commands{add_run_command(app),      add_probes_command(app),
                                         add_diagnose_command(app), add_demo_command(app),
                                         add_glitches_command(app), add_top_command(app),
                                         add_heatmap_command(app),  add_instrument_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every bad flag exits 2, like the other start-up errors.
    return app.exit(e) == 0 ? 0 : 2;
  }
  start_logging(log_level);
  return run_given(commands);
}
