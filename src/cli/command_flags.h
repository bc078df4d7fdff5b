// SPDX-License-Identifier: Apache-2.0
// The command line of each sub-command: add_X_command() declares its flags on the CLI11 app
// (validated there, see validators.h) and returns what runs once they are parsed, so that main
// only assembles the sub-commands and dispatches to the one given.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tailcause::cli {

// A sub-command as main sees it: its CLI11 node (true once it was given) and its action, which
// returns the process exit code (commands.h).
struct SubCommand {
  CLI::App* app;
  std::function<int()> run;
};

SubCommand add_run_command(CLI::App& app);
SubCommand add_probes_command(CLI::App& app);
SubCommand add_diagnose_command(CLI::App& app);
SubCommand add_demo_command(CLI::App& app);
SubCommand add_glitches_command(CLI::App& app);
SubCommand add_top_command(CLI::App& app);
SubCommand add_heatmap_command(CLI::App& app);
SubCommand add_instrument_command(CLI::App& app);

}  // namespace tailcause::cli
