// SPDX-License-Identifier: Apache-2.0
// An agent that invents label values (tests/e2e/test_series_budget.sh), through the SDK's USDT
// probes:
//   series_flood flood TENANTS STAGES AGENTS   one stage of every tenant x agent x free stage
//                                             name, a request per tenant and agent, paced
//   series_flood heavy COMBOS SECONDS         COMBOS (tenant, agent, stage) combinations that
//                                             each spin 20 ms a stage, over and over
// Each first waits (up to 30 s) for a tracer to enable its probes, then prints the stages it
// ended, so the test can hold the daemon's counts to the agent's own.
#include <tailcause/sdk.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

void spin_for(std::chrono::microseconds d) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
  }
}

uint64_t flood(int tenants, int stages, int agents) {
  uint64_t request = 1, ended = 0;
  for (int t = 0; t < tenants; ++t) {
    const std::string tenant = "tenant-" + std::to_string(t);
    for (int a = 0; a < agents; ++a) {
      const std::string agent = "agent-" + std::to_string(a);
      tailcause_request_begin(request, tenant.c_str(), agent.c_str(), "");
      for (int s = 0; s < stages; ++s) {
        const std::string name = "step-" + std::to_string(s);
        tailcause_stage_begin(request, TAILCAUSE_STAGE_OTHER, name.c_str());
        spin_for(std::chrono::microseconds(20));
        tailcause_stage_end(request, TAILCAUSE_STAGE_OTHER);
        ++ended;
      }
      tailcause_request_end(request, 0);
      ++request;
      // Paced so that the ring buffer keeps up: the test counts every stage.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return ended;
}

uint64_t heavy(int combos, int seconds) {
  const auto until = Clock::now() + std::chrono::seconds(seconds);
  uint64_t request = 1'000'000, ended = 0;
  while (Clock::now() < until) {
    for (int c = 0; c < combos; ++c) {
      const std::string name = "heavy-" + std::to_string(c);
      tailcause_request_begin(request, "heavy-tenant", "heavy-agent", "");
      tailcause_stage_begin(request, TAILCAUSE_STAGE_OTHER, name.c_str());
      spin_for(std::chrono::milliseconds(20));
      tailcause_stage_end(request, TAILCAUSE_STAGE_OTHER);
      tailcause_request_end(request, 0);
      ++request;
      ++ended;
    }
  }
  return ended;
}

// Until the daemon has attached to this process (the probes' semaphores are set).
bool traced_within(std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (!TAILCAUSE_ENABLED(stage_end) || !TAILCAUSE_ENABLED(request_end)) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !traced_within(std::chrono::seconds(30))) {
    std::fprintf(stderr, "series_flood: no tracer attached within 30 s\n");
    return 1;
  }
  if (argc == 5 && std::strcmp(argv[1], "flood") == 0) {
    std::printf("%llu\n", static_cast<unsigned long long>(
                              flood(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]))));
    return 0;
  }
  if (argc == 4 && std::strcmp(argv[1], "heavy") == 0) {
    std::printf("%llu\n",
                static_cast<unsigned long long>(heavy(std::atoi(argv[2]), std::atoi(argv[3]))));
    return 0;
  }
  std::fprintf(stderr, "usage: series_flood flood TENANTS STAGES AGENTS | heavy COMBOS SECONDS\n");
  return 2;
}
