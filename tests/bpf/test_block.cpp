// SPDX-License-Identifier: Apache-2.0
// Root tests of the block family: real reads and writes reaching the disk that holds the
// scratch directory.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/host/clock.h"
#include "probes/block_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

constexpr const char* kLatency = "tailcause_block_io_latency_seconds";
constexpr const char* kBytes = "tailcause_block_io_bytes";
constexpr size_t kFileBytes = 8u << 20;
constexpr size_t kChunk = 1u << 20;

std::string uevent_name(const std::string& sysfs_dir) {
  std::ifstream in(sysfs_dir + "/uevent");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
  }
  return "";
}

// The disks that serve requests for `path`, named as the kernel names them: a partition maps
// to its disk (the family reports the request's gendisk, /dev/vda1 -> vda), and a stacked
// device (device mapper, md) to the disks below it, which see the requests.
void add_disks(const std::filesystem::path& dev, std::vector<std::string>& out) {
  std::error_code ec;
  const auto dir = std::filesystem::canonical(dev, ec);
  if (ec) return;
  const auto disk = std::filesystem::exists(dir / "partition") ? dir.parent_path() : dir;
  bool stacked = false;
  for (const auto& slave : std::filesystem::directory_iterator(disk / "slaves", ec)) {
    stacked = true;
    add_disks(slave.path(), out);
  }
  if (!stacked) out.push_back(uevent_name(disk.string()));
}

std::vector<std::string> disks_of(const std::string& path) {
  struct stat st {};
  std::vector<std::string> out;
  if (stat(path.c_str(), &st) != 0) return out;
  add_disks(
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)),
      out);
  return out;
}

// Writes kFileBytes through the page cache and waits for the disk.
void write_file(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  std::vector<char> chunk(kChunk);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>('A' + i % 26);
  for (size_t done = 0; done < kFileBytes; done += kChunk) {
    ASSERT_EQ(write(fd, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
  }
  ASSERT_EQ(fsync(fd), 0);
  close(fd);
}

void drop_cache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
}

// Bytes of the file in the page cache now (mincore on a mapping faults nothing in).
size_t cached_bytes(const std::string& path) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kFileBytes;
  void* map = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return kFileBytes;
  std::vector<unsigned char> vec(kFileBytes / page);
  size_t n = kFileBytes;
  if (mincore(map, kFileBytes, vec.data()) == 0) {
    n = 0;
    for (unsigned char v : vec) n += (v & 1) * page;
  }
  munmap(map, kFileBytes);
  return n;
}

// Reads the whole file; O_DIRECT bypasses the page cache with an aligned buffer. Every chunk
// must hold what write_file wrote: a filesystem answers a range it has not yet mapped as written
// (an unwritten or delayed extent) with zeros and no I/O, which would look like lost requests.
void read_file(const std::string& path, bool direct) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, kChunk), 0);
  size_t total = 0;
  size_t wrong_chunks = 0;
  ssize_t n;
  while ((n = read(fd, buf, kChunk)) > 0) {
    const char* c = static_cast<const char*>(buf);
    if (c[0] != 'A' || c[n - 1] != static_cast<char>('A' + (n - 1) % 26)) ++wrong_chunks;
    total += static_cast<size_t>(n);
  }
  const int err = errno;
  free(buf);
  close(fd);
  ASSERT_EQ(n, 0) << strerror(err);
  ASSERT_EQ(total, kFileBytes);
  ASSERT_EQ(wrong_chunks, 0u) << "read back chunks that are not what was written";
}

struct Io {
  uint64_t count = 0;
  double sum = 0;
  double bytes = 0;
  double kernel_bytes = 0;  // the disks' own count (/sys/block/*/stat), for failure messages
};

// Bytes the kernel counts as read (op "read") or written by `disk` since boot: its sectors field.
double kernel_bytes(const std::string& disk, const char* op) {
  std::ifstream in("/sys/block/" + disk + "/stat");
  std::vector<uint64_t> f(7);
  for (auto& v : f) in >> v;
  return 512.0 * static_cast<double>(std::string(op) == "read" ? f[2] : f[6]);
}

class BlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    path = disk_scratch_dir() + "/memio-block-" + std::to_string(getpid()) + ".dat";
    devices = disks_of(disk_scratch_dir());
    ASSERT_FALSE(devices.empty()) << disk_scratch_dir() << " is not on a block device";
    for (const auto& d : devices) device += (device.empty() ? "" : ",") + d;
    probe.start(ctx);
  }
  void TearDown() override {
    probe.stop();
    unlink(path.c_str());
  }

  // What the disks under the scratch directory did for `op` so far.
  Io io(const char* op) {
    core::MetricSet m;
    probe.collect(m);
    Io out;
    for (const auto& disk : devices) {
      const core::Labels want{{"device", disk}, {"op", op}};
      if (const core::Sample* h = find_sample(m, kLatency, want)) {
        out.count += h->histogram.count;
        out.sum += h->histogram.sum;
        // Prometheus buckets: ascending bounds, cumulative counts, none above the total.
        const auto& b = h->histogram.buckets;
        for (size_t i = 1; i < b.size(); ++i) {
          EXPECT_GT(b[i].first, b[i - 1].first);
          EXPECT_GE(b[i].second, b[i - 1].second);
        }
        if (!b.empty()) {
          EXPECT_LE(b.back().second, h->histogram.count);
        }
      }
      if (const core::Sample* b = find_sample(m, kBytes, want)) out.bytes += b->value;
      out.kernel_bytes += kernel_bytes(disk, op);
    }
    return out;
  }

  // Why requests could go untimed, for a failure's message: what the disks' own counters saw,
  // completions dropped for a full map, and runs of the family's programs the kernel skipped
  // (one already running on the CPU).
  std::string losses(const Io& before, const Io& after) {
    core::MetricSet m;
    probe.collect(m);
    uint64_t skipped = 0;
    for (const bpf_program* p : probe.programs()) skipped += program_info(p).recursion_misses;
    return "; the kernel counted " +
           std::to_string(static_cast<uint64_t>(after.kernel_bytes - before.kernel_bytes)) +
           " bytes, events lost " +
           std::to_string(
               static_cast<uint64_t>(value(m, "tailcause_events_lost", {{"source", "block"}}))) +
           ", program runs skipped " + std::to_string(skipped);
  }

  std::string path;
  std::vector<std::string> devices;
  std::string device;  // for messages
  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  probes::BlockProbe probe;
};

TEST_F(BlockTest, ReadingADroppedFileIsTimedAsReadsOfItsDisk) {
  write_file(path);
  drop_cache(path);
  const size_t cached = cached_bytes(path);  // the few pages eviction may have left behind
  ASSERT_LT(cached, kFileBytes / 20) << "POSIX_FADV_DONTNEED left the file cached";
  const Io before = io("read");
  read_file(path, false);
  const Io after = io("read");
  EXPECT_GT(after.count, before.count) << "no read request timed on " << device;
  EXPECT_GT(after.sum, before.sum);
  EXPECT_GE(after.bytes - before.bytes, static_cast<double>(kFileBytes - cached))
      << losses(before, after);
}

TEST_F(BlockTest, DirectReadsAreTimedAsReads) {
  write_file(path);
  const Io before = io("read");
  read_file(path, true);
  const Io after = io("read");
  EXPECT_GT(after.count, before.count)
      << "no read request timed on " << device << losses(before, after);
  EXPECT_GE(after.bytes - before.bytes, static_cast<double>(kFileBytes)) << losses(before, after);
}

TEST_F(BlockTest, WrittenAndSyncedFileIsTimedAsWrites) {
  const Io before = io("write");
  write_file(path);
  const Io after = io("write");
  EXPECT_GT(after.count, before.count) << "no write request timed on " << device;
  EXPECT_GT(after.sum, before.sum);
  EXPECT_GE(after.bytes - before.bytes, static_cast<double>(kFileBytes));

  core::MetricSet m;
  probe.collect(m);
  EXPECT_NE(find_sample(m, "tailcause_events_lost", {{"source", "block"}}), nullptr);
}

TEST_F(BlockTest, RawTracepointFlavourTimesRequestsToo) {
  probes::Features fallback = host_features();
  fallback.tp_btf = false;
  ASSERT_TRUE(fallback.raw_tp);
  probes::ProbeContext fallback_ctx{fallback, config, names, signals};
  probe.start(fallback_ctx);
  write_file(path);
  const Io before = io("read");
  read_file(path, true);
  const Io after = io("read");
  EXPECT_GT(after.count, before.count)
      << "no read request timed on " << device << losses(before, after);
  EXPECT_GE(after.bytes - before.bytes, static_cast<double>(kFileBytes)) << losses(before, after);
}

TEST(BlockDeviceName, NamesDisksAsTheKernelDoes) {
  // Every disk listed in /sys/block resolves, by its major:minor, to its own name.
  size_t disks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/block")) {
    std::ifstream dev(entry.path() / "dev");
    unsigned maj = 0, min = 0;
    char colon = 0;
    if (!(dev >> maj >> colon >> min)) continue;
    EXPECT_EQ(probes::block_device_name(maj, min), entry.path().filename().string());
    ++disks;
  }
  EXPECT_GT(disks, 0u);
  EXPECT_EQ(probes::block_device_name(4095, 1048575), "");
}

// Whose I/O kept the disk busy: a writer in a cgroup of its own doing O_DIRECT writes is on
// the evidence board as the busiest cgroup other than the one asking, on the scratch disk.
TEST_F(BlockTest, DirectWritesAreChargedToTheWritersCgroup) {
  TestCgroup writer("blkwriter");
  const std::string target = path + ".direct";
  const uint64_t start = core::monotonic_ns();
  const pid_t child = spawn_child(&writer, std::nullopt, [&target] {
    const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    void* buf = nullptr;
    if (fd < 0 || posix_memalign(&buf, 4096, kChunk) != 0) _exit(1);
    std::memset(buf, 'w', kChunk);
    for (uint64_t i = 0;; ++i) {
      if (pwrite(fd, buf, kChunk, static_cast<off_t>((i % 16) * kChunk)) < 0) _exit(1);
    }
  });
  for (int i = 0; i < 30; ++i) {  // 3 s of readings, one every 250 ms
    usleep(100'000);
    probe.tick(ctx);
  }
  stop_child(child);
  unlink(target.c_str());
  const uint64_t end = core::monotonic_ns();
  const auto d = signals.evidence.top_disk_user("/a-cgroup-that-did-no-io", start, end, 0);
  ASSERT_TRUE(d) << "no cgroup's I/O on the evidence board";
  EXPECT_EQ(d->cgroup, writer.name());
  EXPECT_NE(std::find(devices.begin(), devices.end(), d->device), devices.end()) << d->device;
  EXPECT_GE(d->bytes, 16u * kChunk) << "the writer wrote at least its 16 MiB file once";
  std::printf("figure: %s on %s: %.0f MiB, %.0f%% of the disks' request time\n", d->cgroup.c_str(),
              d->device.c_str(), static_cast<double>(d->bytes) / (1 << 20),
              100.0 * static_cast<double>(d->busy_ns) / static_cast<double>(d->total_busy_ns));
  // The requests an I/O scheduler dispatches later, from kblockd, are still the writer's: the
  // next busiest cgroup (the root, where kernel threads live) did far less. Charged at issue
  // alone, the root got about as much as the writer here.
  const auto next = signals.evidence.top_disk_user(writer.name(), start, end, 0);
  if (next) {
    std::printf(
        "figure: next busiest %s: %.0f%% of the disks' request time\n", next->cgroup.c_str(),
        100.0 * static_cast<double>(next->busy_ns) / static_cast<double>(next->total_busy_ns));
    EXPECT_GT(d->busy_ns, 2 * next->busy_ns) << "the writer's I/O was charged to " << next->cgroup;
  }
}

}  // namespace
}  // namespace tailcause::testing
