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
  const std::string copy = (std::filesystem::path(::testing::TempDir()) / "exec-mappings-copy")
                               .lexically_normal()
                               .string();
  std::filesystem::copy_file(self_exe(), copy, std::filesystem::copy_options::overwrite_existing);
  ExecMappings maps;
  EXPECT_FALSE(maps_file(maps.of(getpid()), copy));
  std::this_thread::sleep_for(ExecMappings::kSamePass + std::chrono::milliseconds(100));
  maps.of(getpid());
  EXPECT_EQ(maps.reads(), 1u) << "nothing was mapped: the last reading stands";

  const int fd = open(copy.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  std::this_thread::sleep_for(ExecMappings::kSamePass + std::chrono::milliseconds(100));
  EXPECT_TRUE(maps_file(maps.of(getpid()), copy));
  EXPECT_EQ(maps.reads(), 2u);
  munmap(p, 4096);
  std::filesystem::remove(copy);
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
