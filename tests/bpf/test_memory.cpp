// SPDX-License-Identifier: Apache-2.0
// Root tests of the memory family: real files on a real disk, dropped from the page cache,
// read, written and faulted in by children in real cgroups.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "probes/memory_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

constexpr const char* kMisses = "tailcause_page_cache_misses";
constexpr const char* kFaults = "tailcause_major_faults";
constexpr const char* kProcessMisses = "tailcause_process_page_cache_misses";
constexpr const char* kProcessFaults = "tailcause_process_major_faults";
constexpr size_t kFileBytes = 8u << 20;
constexpr size_t kChunk = 64u << 10;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Writes kFileBytes of non-zero data and waits until it is on disk. Returns false on error.
bool write_file(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::vector<char> chunk(kChunk);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>('a' + i % 26);
  bool ok = true;
  for (size_t done = 0; ok && done < kFileBytes; done += kChunk) {
    ok = write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size());
  }
  ok = ok && fsync(fd) == 0;
  close(fd);
  return ok;
}

// Evicts the (clean) file from the page cache.
void drop_cache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
}

// Pages of the file that are in the page cache now (mincore on a mapping faults nothing in).
size_t resident_pages(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SIZE_MAX;
  void* map = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return SIZE_MAX;
  std::vector<unsigned char> vec(kFileBytes / page_size());
  size_t n = SIZE_MAX;
  if (mincore(map, kFileBytes, vec.data()) == 0) {
    n = 0;
    for (unsigned char v : vec) n += v & 1;
  }
  munmap(map, kFileBytes);
  return n;
}

// Child bodies: each names itself so that the process label is known, exits 0 on success.
void read_all(const std::string& path, const char* comm) {
  prctl(PR_SET_NAME, comm);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) _exit(2);
  std::vector<char> buf(kChunk);
  size_t total = 0;
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) total += static_cast<size_t>(n);
  close(fd);
  _exit(n == 0 && total == kFileBytes ? 0 : 3);
}

void touch_mapping(const std::string& path, const char* comm) {
  prctl(PR_SET_NAME, comm);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) _exit(2);
  auto* p = static_cast<volatile char*>(mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) _exit(3);
  madvise(const_cast<char*>(p), kFileBytes, MADV_RANDOM);  // no readahead: fault page by page
  unsigned sum = 0;
  for (size_t off = 0; off < kFileBytes; off += page_size())
    sum += static_cast<unsigned char>(p[off]);
  _exit(sum > 0 ? 0 : 4);
}

// Waits for the child to exit without reaping it: TestCgroup reaps its members, and a pid
// reaped here could be reused by the time it does.
int wait_exit_status(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) != 0) return -1;
  return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

class MemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    dir = disk_scratch_dir();
    probe.start(ctx);
  }
  void TearDown() override {
    probe.stop();
    for (const auto& f : files) unlink(f.c_str());
  }

  // A file of kFileBytes on disk and out of the page cache; returns the pages still cached.
  std::string dropped_file(const std::string& stem, size_t* still_cached) {
    const std::string path = dir + "/" + stem + "-" + std::to_string(getpid()) + ".dat";
    files.push_back(path);
    EXPECT_TRUE(write_file(path)) << path << ": " << strerror(errno);
    drop_cache(path);
    *still_cached = resident_pages(path);
    EXPECT_LT(*still_cached, pages() / 20) << "POSIX_FADV_DONTNEED left the file cached";
    return path;
  }
  size_t pages() const { return kFileBytes / page_size(); }

  core::MetricSet scrape() {
    names.all();  // learn the test's new cgroups now: name() rescans at most once a second
    core::MetricSet m;
    probe.collect(m);
    return m;
  }

  std::string dir;
  std::vector<std::string> files;
  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  probes::MemoryProbe probe;
};

TEST_F(MemoryTest, ReadsOfDroppedFileMissWritesDoNot) {
  size_t cached = 0;
  const std::string path = dropped_file("memio-read", &cached);
  TestCgroup reader("memio-reader"), writer("memio-writer");

  const pid_t r = spawn_child(&reader, std::nullopt, [&] { read_all(path, "memio-reader"); });
  ASSERT_EQ(wait_exit_status(r), 0) << "reader failed";
  const std::string written = dir + "/memio-written-" + std::to_string(getpid()) + ".dat";
  files.push_back(written);
  const pid_t w = spawn_child(&writer, std::nullopt, [&] {
    prctl(PR_SET_NAME, "memio-writer");
    _exit(write_file(written) ? 0 : 2);
  });
  ASSERT_EQ(wait_exit_status(w), 0) << "writer failed";

  const auto m = scrape();
  const double expected = static_cast<double>(pages() - cached);
  EXPECT_GE(value(m, kMisses, {{"cgroup", reader.name()}}), expected);
  const core::Sample* process =
      find_sample(m, kProcessMisses, {{"cgroup", reader.name()}, {"process", "memio-reader"}});
  ASSERT_NE(process, nullptr) << "no process series for the reader";
  EXPECT_GE(process->value, expected);
  EXPECT_TRUE(probe.tracks_process(static_cast<uint32_t>(r)));

  // Writing adds every page of the new file to the page cache, none of them a miss.
  // The writer may have no series at all: nothing counted.
  EXPECT_LT(sample_value(m, kMisses, {{"cgroup", writer.name()}}).value_or(0), pages() * 0.05);
  EXPECT_LT(
      sample_value(m, kProcessMisses, {{"cgroup", writer.name()}, {"process", "memio-writer"}})
          .value_or(0),
      pages() * 0.05);

  EXPECT_NE(find_sample(m, "tailcause_events_lost", {{"source", "memory"}}), nullptr);
}

TEST_F(MemoryTest, MappedReadsOfDroppedFileAreMajorFaults) {
  ASSERT_TRUE(probe.counts_major_faults()) << "software perf events should work on this host";
  size_t cached = 0;
  const std::string path = dropped_file("memio-mmap", &cached);
  TestCgroup mapper("memio-mapper");

  const pid_t c = spawn_child(&mapper, std::nullopt, [&] { touch_mapping(path, "memio-mapper"); });
  ASSERT_EQ(wait_exit_status(c), 0) << "mapper failed";

  const auto m = scrape();
  EXPECT_GT(value(m, kFaults, {{"cgroup", mapper.name()}}), 0);
  EXPECT_GT(value(m, kProcessFaults, {{"cgroup", mapper.name()}, {"process", "memio-mapper"}}), 0);
  // Pages brought in by faults are read misses too (the fault path is not a write).
  EXPECT_GE(value(m, kMisses, {{"cgroup", mapper.name()}}), static_cast<double>(pages() - cached));
}

// With room for one label value, the other cgroups and processes fold into "__other__" and no
// miss is lost on the way.
TEST_F(MemoryTest, LabelsBeyondTheBudgetFoldIntoOther) {
  config.top_k = 1;
  probe.start(ctx);
  size_t cached_a = 0, cached_b = 0;
  const std::string a_path = dropped_file("memio-fold-a", &cached_a);
  const std::string b_path = dropped_file("memio-fold-b", &cached_b);
  TestCgroup a("memio-fold-a"), b("memio-fold-b");
  const pid_t ra = spawn_child(&a, std::nullopt, [&] { read_all(a_path, "memio-fold-a"); });
  const pid_t rb = spawn_child(&b, std::nullopt, [&] { read_all(b_path, "memio-fold-b"); });
  ASSERT_EQ(wait_exit_status(ra), 0);
  ASSERT_EQ(wait_exit_status(rb), 0);

  const auto m = scrape();
  const double expected = static_cast<double>(2 * pages() - cached_a - cached_b);
  for (const char* family : {kMisses, kProcessMisses}) {
    const auto samples = samples_of(m, family);
    EXPECT_LE(samples.size(), 2u) << family << ": one admitted value and __other__";
    double sum = 0;
    for (const auto& smp : samples) sum += smp.value;
    EXPECT_GE(sum, expected) << family;
  }
  EXPECT_NE(find_sample(m, kMisses, {{"cgroup", core::kOtherLabel}}), nullptr);
  EXPECT_NE(find_sample(m, kProcessMisses,
                        {{"cgroup", core::kOtherLabel}, {"process", core::kOtherLabel}}),
            nullptr);
  EXPECT_GE(probe.folded_label_values(), 2u);
}

// The fallbacks: raw tracepoints instead of tp_btf, and no perf events (so no major faults).
TEST_F(MemoryTest, RawTracepointsWithoutPerfEventsStillCountMisses) {
  probes::Features fallback = host_features();
  fallback.tp_btf = false;
  fallback.perf_event = false;
  ASSERT_TRUE(fallback.raw_tp);
  probes::ProbeContext fallback_ctx{fallback, config, names, signals};
  probe.start(fallback_ctx);
  EXPECT_FALSE(probe.counts_major_faults());
  size_t cached = 0;
  const std::string path = dropped_file("memio-raw", &cached);
  TestCgroup reader("memio-raw-reader"), writer("memio-raw-writer");

  const pid_t r = spawn_child(&reader, std::nullopt, [&] { read_all(path, "memio-raw"); });
  ASSERT_EQ(wait_exit_status(r), 0) << "reader failed";
  const std::string written = dir + "/memio-raw-written-" + std::to_string(getpid()) + ".dat";
  files.push_back(written);
  const pid_t w = spawn_child(&writer, std::nullopt, [&] { _exit(write_file(written) ? 0 : 2); });
  ASSERT_EQ(wait_exit_status(w), 0) << "writer failed";

  const auto m = scrape();
  EXPECT_GE(value(m, kMisses, {{"cgroup", reader.name()}}), static_cast<double>(pages() - cached));
  EXPECT_LT(sample_value(m, kMisses, {{"cgroup", writer.name()}}).value_or(0), pages() * 0.05);
  EXPECT_TRUE(samples_of(m, kFaults).empty());
  EXPECT_TRUE(samples_of(m, kProcessFaults).empty());
}

TEST_F(MemoryTest, ExitedProcessesLeaveTheMapButKeepTheirCounts) {
  size_t cached = 0;
  const std::string path = dropped_file("memio-exit", &cached);
  TestCgroup group("memio-exited");
  int pid_pipe[2];
  ASSERT_EQ(pipe(pid_pipe), 0);

  // The reader is a grandchild, reaped by its parent, so its pid is really gone.
  const pid_t c = spawn_child(&group, std::nullopt, [&] {
    const pid_t worker = fork();
    if (worker == 0) read_all(path, "memio-exited");
    int status = 0;
    if (write(pid_pipe[1], &worker, sizeof worker) != sizeof worker) _exit(5);
    if (worker < 0 || waitpid(worker, &status, 0) != worker) _exit(6);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 7);
  });
  close(pid_pipe[1]);
  pid_t worker = -1;
  ASSERT_EQ(read(pid_pipe[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  close(pid_pipe[0]);
  ASSERT_EQ(wait_exit_status(c), 0) << "reader failed";

  const double expected = static_cast<double>(pages() - cached);
  const auto first = scrape();
  const double misses = value(first, kMisses, {{"cgroup", group.name()}});
  const double process =
      value(first, kProcessMisses, {{"cgroup", group.name()}, {"process", "memio-exited"}});
  EXPECT_GE(misses, expected);
  EXPECT_GE(process, expected);
  EXPECT_FALSE(probe.tracks_process(static_cast<uint32_t>(worker)));

  const auto second = scrape();
  EXPECT_GE(value(second, kMisses, {{"cgroup", group.name()}}), misses);
  EXPECT_GE(value(second, kProcessMisses, {{"cgroup", group.name()}, {"process", "memio-exited"}}),
            process);
}

}  // namespace
}  // namespace tailcause::testing
