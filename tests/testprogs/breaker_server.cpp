// SPDX-License-Identifier: Apache-2.0
// Serves a real BreakerSocket on a given path with a fixed table of breakers, for the SDK
// clients' tests (C gtest and Python) without a daemon.
//
//   breaker_server SOCKET [TENANT AGENT open|closed CONSECUTIVE RETRY_MS]...
//
// TENANT and AGENT are percent-encoded as in the protocol ("%" alone: empty). A pair not in the
// table reads closed, 0, 0. Prints "ready" once the socket accepts connections, serves until
// stdin reaches EOF, then prints "requests ok=N error=M" and exits 0 (2 on bad arguments, 1
// when the socket cannot be served).
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <utility>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/detect/breaker_protocol.h"
#include "export/breaker_socket.h"

namespace core = tailcause::core;

namespace {

struct Row {
  core::BreakerState state = core::BreakerState::closed;
  uint32_t consecutive = 0;
  uint64_t retry_after_ms = 0;
};

int usage(const char* why) {
  std::fprintf(stderr,
               "breaker_server: %s\nusage: breaker_server SOCKET "
               "[TENANT AGENT open|closed CONSECUTIVE RETRY_MS]...\n",
               why);
  return 2;
}

double counter(const core::MetricSet& set, const char* result) {
  const auto* s = set.find("tailcause_breaker_socket_requests", {{"result", result}});
  return s ? s->value : -1;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_st("breaker_server"));  // stdout: "ready"
  if (argc < 2 || (argc - 2) % 5 != 0) return usage("wrong number of arguments");
  std::map<std::pair<std::string, std::string>, Row> table;
  for (int i = 2; i < argc; i += 5) {
    auto tenant = core::breaker_percent_decode(argv[i]);
    auto agent = core::breaker_percent_decode(argv[i + 1]);
    const std::string state = argv[i + 2];
    if (!tenant || !agent) return usage("bad percent-encoding");
    if (state != "open" && state != "closed") return usage("state must be open or closed");
    Row row;
    row.state = state == "open" ? core::BreakerState::open : core::BreakerState::closed;
    try {
      row.consecutive = static_cast<uint32_t>(std::stoul(argv[i + 3]));
      row.retry_after_ms = std::stoull(argv[i + 4]);
    } catch (const std::exception&) {
      return usage("CONSECUTIVE and RETRY_MS must be numbers");
    }
    table[{*tenant, *agent}] = row;
  }

  auto provider = [&table](const core::BreakerRequest& request) -> std::string {
    if (request.command == core::BreakerCommand::list) {
      std::vector<core::BreakerView> open;
      for (const auto& [key, row] : table) {
        if (row.state != core::BreakerState::open) continue;
        open.push_back(
            {key.first, key.second, row.state, row.consecutive, row.retry_after_ms * 1'000'000});
      }
      return core::format_breaker_list(open);
    }
    auto it = table.find({request.tenant, request.agent});
    const Row row = it == table.end() ? Row{} : it->second;
    return core::format_breaker_state(row.state, row.consecutive, row.retry_after_ms);
  };

  tailcause::exporter::BreakerSocket socket(argv[1], provider);
  try {
    socket.start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "breaker_server: %s\n", e.what());
    return 1;
  }
  std::cout << "ready" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  socket.stop();
  core::MetricSet set;
  socket.collect(set);
  std::cout << "requests ok=" << counter(set, "ok") << " error=" << counter(set, "error")
            << std::endl;
  return 0;
}
