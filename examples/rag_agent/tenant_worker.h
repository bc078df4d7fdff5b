// SPDX-License-Identifier: Apache-2.0
// A tenant's worker process: joins the tenant's cgroup, then runs an open-loop request
// generator and a pool of worker threads for --duration, and reports its measurements to the
// supervisor as one JSON document on a pipe.
#pragma once

#include <optional>
#include <string>

namespace rag {

struct TenantSpec {
  std::string name;
  std::string index_path;
  std::string cgroup_leaf;     // "" when tenants share the agent's cgroup
  std::string io_leaf;         // the block I/O controller's leaf (cold-cache fault), or ""
  std::optional<int> pin_cpu;  // the hog fault pins the tenant and its hogs to one CPU
  double rate = 5;
  int concurrency = 2;
  double duration = 10;
  int tool_port = 0;
  bool cold_cache = false, slow_peer = false, lock = false, entropy = false, cache_bust = false;
  bool shed_when_open = false;
  bool cache_loop = false;
  std::size_t cache_entries = 128;  // 0: no retrieval cache
  std::size_t nprobe = 6;
};

// Runs in the forked child; writes the JSON result to result_fd and exits. Never returns.
[[noreturn]] void run_tenant_worker(const TenantSpec& spec, int result_fd);

}  // namespace rag
