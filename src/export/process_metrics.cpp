// SPDX-License-Identifier: Apache-2.0
#include "export/process_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "core/host/proc_self.h"

namespace tailcause::exporter {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

void collect_process_metrics(core::MetricSet& out, const std::string& proc,
                             const std::string& pid) {
  using core::MetricType;
  const std::string dir = proc + "/" + pid;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const auto stat_text = read_file(dir + "/stat");
  const auto stat = stat_text ? core::parse_proc_stat(*stat_text) : std::nullopt;
  if (stat && ticks > 0) {
    out.add("process_cpu_seconds", MetricType::Counter,  // rendered with _total
            "Total user and system CPU time spent in seconds.", {},
            static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks);
    out.add("process_resident_memory_bytes", MetricType::Gauge, "Resident memory size in bytes.",
            {}, static_cast<double>(stat->rss_pages) * page);
    out.add("process_virtual_memory_bytes", MetricType::Gauge, "Virtual memory size in bytes.", {},
            static_cast<double>(stat->vsize_bytes));
    const auto boot_text = read_file(proc + "/stat");
    if (auto btime = boot_text ? core::parse_boot_time(*boot_text) : std::nullopt) {
      out.add("process_start_time_seconds", MetricType::Gauge,
              "Start time of the process since unix epoch in seconds.", {},
              static_cast<double>(*btime) + static_cast<double>(stat->starttime_ticks) / ticks);
    }
  }
  std::error_code ec;
  size_t fds = 0;
  for (std::filesystem::directory_iterator it(dir + "/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    out.add("process_open_fds", MetricType::Gauge, "Number of open file descriptors.", {},
            static_cast<double>(fds));
  }
  const auto limits_text = read_file(dir + "/limits");
  if (auto max = limits_text ? core::parse_max_open_files(*limits_text) : std::nullopt) {
    out.add("process_max_fds", MetricType::Gauge, "Maximum number of open file descriptors.", {},
            static_cast<double>(*max));
  }
}

}  // namespace tailcause::exporter
