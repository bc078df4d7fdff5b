// SPDX-License-Identifier: Apache-2.0
// rag-agent: the tailcause example agent. A multi-tenant retrieval-augmented generation
// service that does real work (tokenising, matrix arithmetic, nearest-neighbour search over
// files, a token loop, loopback HTTP) with one process and one cgroup per tenant, and faults that
// can be injected for real. See examples/README.md.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "options.h"
#include "supervisor.h"

int main(int argc, char** argv) {
  int exit_code = 0;
  auto options = rag::parse_options(argc, argv, exit_code);
  if (!options) return exit_code;
  // Logs on stderr; stdout carries only the summary table.
  spdlog::set_default_logger(spdlog::stderr_color_mt("agent"));
  spdlog::set_pattern("%H:%M:%S.%e [agent] %^%l%$ %v");
  try {
    return rag::run_agent(*options);
  } catch (const std::invalid_argument& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
