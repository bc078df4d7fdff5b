// SPDX-License-Identifier: Apache-2.0
// Checks the capabilities the daemon needs before anything is loaded, so a missing one is
// named instead of surfacing as an EPERM from deep inside libbpf.
#pragma once

#include <string>
#include <vector>

namespace tailcause::probes {

// Names of missing capabilities ("CAP_BPF", "CAP_PERFMON"), empty when all are present.
// CAP_SYS_ADMIN stands in for both, as it does on kernels before 5.8.
std::vector<std::string> missing_capabilities();

}  // namespace tailcause::probes
