// SPDX-License-Identifier: Apache-2.0
// Retrievals from an index file before and after libtailcause_cache's locality layout, for
// tests/e2e/test_locality.sh (the daemon measures the page-cache misses):
//
//   locality_agent DIR RETRIEVALS
//
// DIR/index.f32 gets 16384 rows of 1 KiB; 2048 groups of 8 rows are read together, each group's
// rows scattered over the file. Tenant loc-original runs RETRIEVALS retrievals on that file,
// CoAccessTracker logging which rows each one read; the library groups them, layout_order() and
// write_layout() write DIR/layout.f32; tenant loc-layout runs the same retrievals there. Before
// each retrieval the file leaves the page cache (POSIX_FADV_DONTNEED) and readahead is off
// (POSIX_FADV_RANDOM), so each page a retrieval reads is one page-cache miss. Each retrieval is
// an SDK request with one retrieval stage. Independently of the daemon, mincore() counts the
// pages each retrieval brought in. Prints key=value lines per tenant: retrievals, pages (by
// mincore) per retrieval, wall time per retrieval (ms), and the groups the library found.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tailcause/cache/locality.h>
#include <tailcause/sdk.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tc = tailcause::cache;

namespace {

constexpr std::size_t kDim = 256;  // 1 KiB rows: four to a page
constexpr std::size_t kRows = 16384;
constexpr std::size_t kGroup = 8;
constexpr std::size_t kRowBytes = kDim * sizeof(float);

uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct File {
  int fd = -1;
  std::size_t bytes = 0;
  explicit File(const std::string& path) : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) throw std::runtime_error("cannot open " + path);
    bytes = static_cast<std::size_t>(st.st_size);
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // no readahead: a page read is a page missed
    fdatasync(fd);  // just written: dirty pages would stay in the page cache
  }
  ~File() { close(fd); }
  void evict() const { posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); }
  // Pages of the file in the page cache now (the kernel's own count, through a mapping).
  std::size_t resident_pages() const {
    const long page = sysconf(_SC_PAGESIZE);
    void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    std::vector<unsigned char> in((bytes + page - 1) / page);
    mincore(m, bytes, in.data());
    munmap(m, bytes);
    std::size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n;
  }
};

struct Totals {
  std::size_t retrievals = 0, pages = 0;
  double wall_ms = 0;
};

// One tenant's retrievals over `file`: group g's rows at positions `where(row)`.
template <typename Where>
Totals run(const std::string& tenant, const File& file,
           const std::vector<std::vector<uint32_t>>& groups, std::size_t retrievals, Where where,
           tc::CoAccessTracker* log) {
  Totals t;
  std::mt19937_64 rng(7);
  std::vector<float> row(kDim);
  for (std::size_t i = 0; i < retrievals; ++i) {
    const auto& group = groups[rng() % groups.size()];
    file.evict();
    const std::size_t before = file.resident_pages();
    const uint64_t t0 = now_ns();
    {
      tailcause::Request request(tenant, "locality");
      tailcause::Stage stage(request, tailcause::StageKind::retrieval);
      for (uint32_t r : group) {
        const off_t at = static_cast<off_t>(where(r)) * static_cast<off_t>(kRowBytes);
        if (pread(file.fd, row.data(), kRowBytes, at) != static_cast<ssize_t>(kRowBytes))
          throw std::runtime_error("short read");
        // The log's clock: a retrieval every 200 ms, one co-access window each.
        if (log) log->record(r, i * 200'000'000ULL);
      }
    }
    t.wall_ms += static_cast<double>(now_ns() - t0) / 1e6;
    t.pages += file.resident_pages() - before;
    ++t.retrievals;
  }
  if (log) log->flush();
  return t;
}

void print(const char* key, const Totals& t) {
  std::printf("%s.retrievals=%zu\n%s.pages_per_retrieval=%.3f\n%s.ms_per_retrieval=%.3f\n", key,
              t.retrievals, key, static_cast<double>(t.pages) / t.retrievals, key,
              t.wall_ms / t.retrievals);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: locality_agent DIR RETRIEVALS\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::size_t retrievals = std::strtoul(argv[2], nullptr, 10);
  try {
    // Rows and the groups read together, each group scattered over the file.
    std::mt19937_64 rng(1);
    std::vector<float> rows(kRows * kDim);
    for (auto& x : rows) x = static_cast<float>(rng() % 1000) / 1000.0f;
    std::vector<uint32_t> shuffled(kRows);
    for (uint32_t i = 0; i < kRows; ++i) shuffled[i] = i;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<std::vector<uint32_t>> groups;
    for (std::size_t g = 0; g + kGroup <= kRows; g += kGroup)
      groups.emplace_back(shuffled.begin() + g, shuffled.begin() + g + kGroup);
    std::vector<uint32_t> identity(kRows);
    for (uint32_t i = 0; i < kRows; ++i) identity[i] = i;
    tc::write_layout(dir + "/index.f32", rows, kDim, identity);

    tc::CoAccessTracker log(tc::kCoAccessWindowNs, 64);
    const File original(dir + "/index.f32");
    const Totals before = run(
        "loc-original", original, groups, retrievals, [](uint32_t r) { return r; }, &log);

    const auto found = log.groups();
    const auto order = tc::layout_order(kRows, found);
    tc::write_layout(dir + "/layout.f32", rows, kDim, order);
    std::vector<uint32_t> position(kRows);  // old row -> its row in the new file
    for (uint32_t i = 0; i < kRows; ++i) position[order[i]] = i;
    const File laid_out(dir + "/layout.f32");
    const Totals after = run(
        "loc-layout", laid_out, groups, retrievals, [&](uint32_t r) { return position[r]; },
        nullptr);

    print("original", before);
    print("layout", after);
    std::printf("groups_found=%zu\n", found.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locality_agent: %s\n", e.what());
    return 1;
  }
  return 0;
}
