// SPDX-License-Identifier: Apache-2.0
// The shared reading of /proc/<pid>/maps: this process's own maps, really read.
#include "probes/exec_mappings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

namespace tailcause::probes {
namespace {

bool maps_file(const std::vector<MapsEntry>& files, const std::string& path) {
  return std::any_of(files.begin(), files.end(),
                     [&](const MapsEntry& e) { return e.path == path; });
}

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

// A copy of this test's executable, to map: a file no pass has seen mapped yet.
struct ExeCopy {
  explicit ExeCopy(const std::string& name)
      : path((std::filesystem::path(::testing::TempDir()) / name).lexically_normal().string()) {
    std::filesystem::copy_file(self_exe(), path, std::filesystem::copy_options::overwrite_existing);
  }
  ~ExeCopy() {
    if (mapped) munmap(mapped, 4096);
    std::filesystem::remove(path);
  }
  // Maps its first page executable; false when that failed.
  bool map() {
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    close(fd);
    mapped = p == MAP_FAILED ? nullptr : p;
    return mapped != nullptr;
  }
  const std::string path;
  void* mapped = nullptr;
};

TEST(ExecMappings, ListsEachExecutableFileOnce) {
  ExecMappings maps;
  const auto& files = maps.of(getpid());
  EXPECT_TRUE(maps_file(files, self_exe()));
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t j = i + 1; j < files.size(); ++j) EXPECT_FALSE(files[i].id == files[j].id);
  }
  EXPECT_EQ(maps.reads(), 1u);
}

TEST(ExecMappings, OneReadingServesOnePass) {
  ExecMappings maps;
  maps.of(getpid());
  maps.of(getpid());
  EXPECT_EQ(maps.reads(), 1u);
  EXPECT_EQ(maps.skips(), 1u);
  maps.of(getpid(), true);  // after an exec: read whatever the stamp says
  EXPECT_EQ(maps.reads(), 2u);
}

// A file mapped executable changes the virtual size: the next pass reads the maps again and
// lists it. Nothing else of this process changes between two passes: the second is not read.
TEST(ExecMappings, ReadsAgainWhenAFileIsMapped) {
  ExeCopy copy("exec-mappings-copy");
  ExecMappings maps;
  EXPECT_FALSE(maps_file(maps.of(getpid()), copy.path));
  std::this_thread::sleep_for(ExecMappings::kSamePass + std::chrono::milliseconds(100));
  maps.of(getpid());
  EXPECT_EQ(maps.reads(), 1u) << "nothing was mapped: the last reading stands";

  ASSERT_TRUE(copy.map());
  std::this_thread::sleep_for(ExecMappings::kSamePass + std::chrono::milliseconds(100));
  EXPECT_TRUE(maps_file(maps.of(getpid()), copy.path));
  EXPECT_EQ(maps.reads(), 2u);
}

// With the kernel's reports of new mappings, a known process is not looked at (no /proc read
// at all) until it is reported, or reports were lost; then its new mapping is listed.
TEST(ExecMappings, WithAChangeFeedOnlyReportedProcessesAreLookedAt) {
  ExeCopy copy("exec-mappings-feed");
  ExecMappings maps;
  maps.use_change_feed(true);
  EXPECT_FALSE(maps_file(maps.of(getpid()), copy.path));
  EXPECT_EQ(maps.looks(), 1u) << "a process not known yet is looked at";

  ASSERT_TRUE(copy.map());
  std::this_thread::sleep_for(ExecMappings::kSamePass + std::chrono::milliseconds(100));
  EXPECT_FALSE(maps_file(maps.of(getpid()), copy.path)) << "not reported: taken as it was";
  EXPECT_EQ(maps.looks(), 1u);

  maps.changed(getpid());
  EXPECT_TRUE(maps_file(maps.of(getpid()), copy.path));
  EXPECT_EQ(maps.looks(), 2u);
  EXPECT_EQ(maps.reads(), 2u);
  maps.of(getpid());  // a report holds for the next pass too: looked at, the reading stands
  EXPECT_EQ(maps.looks(), 3u);
  EXPECT_EQ(maps.reads(), 2u);

  maps.all_changed();  // reports were lost: every known process is looked at once
  maps.of(getpid());
  EXPECT_EQ(maps.looks(), 4u);
  maps.use_change_feed(false);  // without the feed, every call looks
  maps.of(getpid());
  EXPECT_EQ(maps.looks(), 5u);
}

// Which processes a scan goes over: all of /proc without the feed; with it, /proc every
// kListEvery and otherwise the processes known and reported.
TEST(ExecMappings, WithAChangeFeedProcIsListedSeldom) {
  ExecMappings maps;
  bool listed = false;
  EXPECT_GT(maps.scan_list(listed).size(), 1u);
  EXPECT_TRUE(listed);
  maps.scan_list(listed);
  EXPECT_TRUE(listed) << "without the feed every scan lists /proc";

  maps.use_change_feed(true);
  maps.scan_list(listed);
  EXPECT_TRUE(listed) << "the first scan with the feed lists: what came before was not reported";
  maps.scan_list(listed);
  EXPECT_FALSE(listed) << "listed less than kListEvery ago";
  maps.of(getpid());
  const pid_t reported = 999999999;  // above any pid_max: reported, not known
  maps.changed(reported);
  auto pids = maps.scan_list(listed);
  std::sort(pids.begin(), pids.end());
  EXPECT_FALSE(listed);
  EXPECT_EQ(pids, (std::vector<pid_t>{getpid(), reported}));
}

TEST(ExecMappings, GoneProcessesHaveNothing) {
  ExecMappings maps;
  EXPECT_TRUE(maps.of(0).empty());  // no /proc/0
  maps.of(getpid());
  maps.keep_only({});
  maps.of(getpid());
  EXPECT_EQ(maps.reads(), 2u) << "a forgotten process is read again";
}

}  // namespace
}  // namespace tailcause::probes
