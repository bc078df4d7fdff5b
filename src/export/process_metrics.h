// SPDX-License-Identifier: Apache-2.0
// The Prometheus client's standard process series for the daemon itself, with their usual
// names (no tailcause_ prefix, as every exporter's): process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
// process_max_fds, process_start_time_seconds. Read from /proc at each scrape
// (core/host/proc_self.h parses); a file that cannot be read leaves its series out.
#pragma once

#include <string>

#include "core/record/metrics.h"

namespace tailcause::exporter {

// `proc` is procfs's mount point (tests may point it elsewhere); `pid` "self" or a number.
void collect_process_metrics(core::MetricSet& out, const std::string& proc = "/proc",
                             const std::string& pid = "self");

}  // namespace tailcause::exporter
