// SPDX-License-Identifier: Apache-2.0
// The daemon's own process figures, read from procfs text, for the Prometheus client's standard
// process_* series (process_cpu_seconds_total, process_resident_memory_bytes, ...). Pure parsers
// over the files' text; export/process_metrics.cpp reads the files. Every parser returns nullopt
// rather than a guess when the text is not what the kernel writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

// The fields of /proc/PID/stat the process_* series need (proc(5) numbering).
struct ProcStat {
  uint64_t utime_ticks = 0;      // (14) user CPU time, clock ticks
  uint64_t stime_ticks = 0;      // (15) system CPU time, clock ticks
  uint64_t starttime_ticks = 0;  // (22) start time after boot, clock ticks
  uint64_t vsize_bytes = 0;      // (23) virtual memory size
  uint64_t rss_pages = 0;        // (24) resident set size, pages
  bool operator==(const ProcStat&) const = default;
};

// /proc/PID/stat: "pid (comm) state ppid ...". comm may hold spaces and ')' itself, so fields
// are counted from its last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

// /proc/PID/limits: the soft limit of "Max open files"; nullopt when absent or "unlimited".
std::optional<uint64_t> parse_max_open_files(std::string_view text);

// /proc/stat: the boot time, "btime <unix seconds>".
std::optional<uint64_t> parse_boot_time(std::string_view text);

}  // namespace tailcause::core
