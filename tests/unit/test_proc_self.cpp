// SPDX-License-Identifier: Apache-2.0
// The process_* series: procfs parsing on the kernel's own text (and this process's files), and
// the collector against a procfs tree written here.
#include "core/host/proc_self.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "export/process_metrics.h"
#include "temp_dir.h"

namespace tailcause::core {
namespace {

// A real line (a daemon named with spaces and a ')' in its comm).
constexpr const char* kStat =
    "4242 (tail cause) x) S 1 4242 4242 0 -1 4194560 2573 0 0 0 150 37 0 0 20 0 9 0 "
    "1234567 876543210 5120 18446744073709551615 1 1 0 0 0 0 0 4096 17131 0 0 0 17 3 0 0 0 0 0\n";

TEST(ProcSelf, ParsesStat) {
  const auto s = parse_proc_stat(kStat);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->utime_ticks, 150u);
  EXPECT_EQ(s->stime_ticks, 37u);
  EXPECT_EQ(s->starttime_ticks, 1234567u);
  EXPECT_EQ(s->vsize_bytes, 876543210u);
  EXPECT_EQ(s->rss_pages, 5120u);
}

TEST(ProcSelf, RefusesWhatTheKernelDoesNotWrite) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("4242 tailcause S 1 2 3"));               // no comm
  EXPECT_FALSE(parse_proc_stat("4242 (tailcause) S 1 4242 4242 0 -1"));  // cut short
  std::string bad = kStat;
  bad.replace(bad.find("150"), 3, "1x0");
  EXPECT_FALSE(parse_proc_stat(bad));
}

TEST(ProcSelf, ParsesThisProcessesFiles) {
  std::ifstream f("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  const auto s = parse_proc_stat(text);
  ASSERT_TRUE(s) << text;
  EXPECT_GT(s->rss_pages, 0u);
  EXPECT_GT(s->vsize_bytes, s->rss_pages);
  std::ifstream st("/proc/stat");
  const std::string stat((std::istreambuf_iterator<char>(st)), {});
  EXPECT_GT(parse_boot_time(stat).value_or(0), 1'000'000'000u);
}

TEST(ProcSelf, MaxOpenFilesAndBootTime) {
  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max processes             96362                96362                processes \n"
      "Max open files            1024                 524288               files     \n";
  EXPECT_EQ(parse_max_open_files(limits), 1024u);
  EXPECT_FALSE(parse_max_open_files(
      "Max open files            unlimited            unlimited            files\n"));
  EXPECT_FALSE(parse_max_open_files("Max processes 5 5 processes\n"));
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1796115015\nprocesses 9\n"), 1796115015u);
  EXPECT_FALSE(parse_boot_time("cpu  1 2 3\n"));
  EXPECT_FALSE(parse_boot_time("btime soon\n"));
}

std::map<std::string, double> collect(const std::string& proc, const std::string& pid) {
  MetricSet set;
  exporter::collect_process_metrics(set, proc, pid);
  std::map<std::string, double> out;
  for (const auto& f : set.families()) {
    EXPECT_EQ(f.samples.size(), 1u) << f.name;
    out[f.name] = f.samples.at(0).value;
  }
  return out;
}

TEST(ProcessMetrics, FromAProcfsTree) {
  testing::TempDir dir;
  const std::string proc = dir.path.string();
  std::filesystem::create_directories(proc + "/77/fd");
  for (int i = 0; i < 3; ++i) std::ofstream(proc + "/77/fd/" + std::to_string(i)) << "";
  std::ofstream(proc + "/77/stat") << kStat;
  std::ofstream(proc + "/77/limits")
      << "Max open files            4096                 4096    files\n";
  std::ofstream(proc + "/stat") << "cpu 1 2\nbtime 1700000000\n";
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto m = collect(proc, "77");
  EXPECT_DOUBLE_EQ(m.at("process_cpu_seconds"), 187 / ticks);
  EXPECT_DOUBLE_EQ(m.at("process_resident_memory_bytes"), 5120.0 * sysconf(_SC_PAGESIZE));
  EXPECT_DOUBLE_EQ(m.at("process_virtual_memory_bytes"), 876543210.0);
  EXPECT_DOUBLE_EQ(m.at("process_start_time_seconds"), 1700000000 + 1234567 / ticks);
  EXPECT_EQ(m.at("process_open_fds"), 3);
  EXPECT_EQ(m.at("process_max_fds"), 4096);

  // Missing or foreign files leave their series out, nothing else.
  std::ofstream(proc + "/77/stat") << "garbage";
  const auto partial = collect(proc, "77");
  EXPECT_EQ(partial.count("process_cpu_seconds"), 0u);
  EXPECT_EQ(partial.at("process_open_fds"), 3);
  EXPECT_TRUE(collect(proc, "78").empty());
}

TEST(ProcessMetrics, ThisProcess) {
  const auto m = collect("/proc", "self");
  EXPECT_GT(m.at("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(m.at("process_open_fds"), 3);
  EXPECT_GE(m.at("process_max_fds"), m.at("process_open_fds"));
  EXPECT_GT(m.at("process_start_time_seconds"), 1'600'000'000);
}

}  // namespace
}  // namespace tailcause::core
