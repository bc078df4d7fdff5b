// SPDX-License-Identifier: Apache-2.0
// The agent's parent process: prepares the index files and cgroups, starts the tool server,
// the fault helpers and one worker process per tenant, waits for --duration (or a signal),
// then stops everything, removes the cgroups and reports.
#pragma once

#include "options.h"

namespace rag {

// Returns the process exit code: 0 when every tenant reported, 1 otherwise. Throws
// std::invalid_argument for a bad flag found late (--cgroup-root), std::runtime_error otherwise.
int run_agent(const Options& options);

}  // namespace rag
