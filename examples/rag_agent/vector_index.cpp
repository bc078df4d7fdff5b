// SPDX-License-Identifier: Apache-2.0
#include "vector_index.h"

#include "linalg.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "rng.h"

namespace rag {
namespace {

constexpr char kMagic[8] = {'I', 'T', 'R', 'A', 'G', 'I', 'X', '1'};
constexpr std::size_t kBlock = 4096;

struct Header {
  char magic[8];
  uint32_t dim, nlist;
  uint64_t count, seed;
};

std::size_t nlist_for(std::size_t count) { return std::clamp<std::size_t>(count / 800, 4, 4096); }

uint64_t header_bytes(std::size_t dim, std::size_t nlist) {
  uint64_t raw = sizeof(Header) + nlist * dim * sizeof(float) + (nlist + 1) * sizeof(uint64_t);
  return (raw + kBlock - 1) / kBlock * kBlock;
}

void full_pwrite(int fd, const void* buf, std::size_t len, uint64_t off, const std::string& path) {
  auto* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("write {}: {}", path, std::strerror(errno)));
    p += n, len -= static_cast<std::size_t>(n), off += static_cast<uint64_t>(n);
  }
}

void full_pread(int fd, void* buf, std::size_t len, uint64_t off) {
  auto* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("pread index: {}", std::strerror(errno)));
    if (n == 0) throw std::runtime_error("pread index: file is shorter than its header says");
    p += n, len -= static_cast<std::size_t>(n), off += static_cast<uint64_t>(n);
  }
}

void normalize(std::span<float> v) {
  float norm = 0;
  for (float x : v) norm += x * x;
  norm = std::sqrt(norm) + 1e-12f;
  for (float& x : v) x /= norm;
}

bool existing_file_matches(const std::string& path, std::size_t count, std::size_t dim,
                           uint64_t seed) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Header h{};
  struct stat st {};
  bool ok = ::pread(fd, &h, sizeof h, 0) == sizeof h && ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!ok || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return false;
  uint64_t want_size = header_bytes(dim, nlist_for(count)) + uint64_t(count) * dim * sizeof(float);
  return h.dim == dim && h.count == count && h.seed == seed && h.nlist == nlist_for(count) &&
         uint64_t(st.st_size) == want_size;
}

// Keeps the k best in `best` (sorted best first); k is small, so insertion is cheapest.
void offer(std::vector<Neighbour>& best, std::size_t k, Neighbour n) {
  if (best.size() == k && n.score <= best.back().score) return;
  auto pos =
      std::upper_bound(best.begin(), best.end(), n,
                       [](const Neighbour& a, const Neighbour& b) { return a.score > b.score; });
  best.insert(pos, n);
  if (best.size() > k) best.pop_back();
}

std::atomic<uint64_t> g_bytes_read{0};

}  // namespace

bool ensure_index_file(const std::string& path, std::size_t count, std::size_t dim, uint64_t seed) {
  if (existing_file_matches(path, count, dim, seed)) return false;
  const std::size_t nlist = nlist_for(count);
  const uint64_t data_offset = header_bytes(dim, nlist);
  // Written under a temporary name and renamed, so concurrent agents never read half a file.
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("create {}: {}", tmp, std::strerror(errno)));
  try {
    SplitMix rng(seed);
    std::vector<float> centres(nlist * dim);
    for (std::size_t c = 0; c < nlist; ++c) {
      for (std::size_t j = 0; j < dim; ++j) centres[c * dim + j] = rng.normal();
      normalize({&centres[c * dim], dim});
    }
    std::vector<uint64_t> starts(nlist + 1, 0);
    std::vector<float> means(nlist * dim, 0.0f);
    std::vector<float> chunk;
    uint64_t row = 0;
    for (std::size_t c = 0; c < nlist; ++c) {
      starts[c] = row;
      std::size_t rows = count / nlist + (c < count % nlist ? 1 : 0);
      chunk.assign(rows * dim, 0.0f);
      for (std::size_t r = 0; r < rows; ++r) {
        float* v = &chunk[r * dim];
        for (std::size_t j = 0; j < dim; ++j) v[j] = centres[c * dim + j] + 0.08f * rng.normal();
        normalize({v, dim});
        for (std::size_t j = 0; j < dim; ++j) means[c * dim + j] += v[j];
      }
      full_pwrite(fd, chunk.data(), chunk.size() * sizeof(float),
                  data_offset + row * dim * sizeof(float), tmp);
      row += rows;
      normalize({&means[c * dim], dim});
    }
    starts[nlist] = row;
    std::vector<char> head(data_offset, 0);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.dim = static_cast<uint32_t>(dim), h.nlist = static_cast<uint32_t>(nlist), h.count = count,
    h.seed = seed;
    std::memcpy(head.data(), &h, sizeof h);
    std::memcpy(head.data() + sizeof h, means.data(), means.size() * sizeof(float));
    std::memcpy(head.data() + sizeof h + means.size() * sizeof(float), starts.data(),
                starts.size() * sizeof(uint64_t));
    full_pwrite(fd, head.data(), head.size(), 0, tmp);
    // Clean pages: POSIX_FADV_DONTNEED can only drop what has been written back.
    if (::fdatasync(fd) != 0)
      throw std::runtime_error(fmt::format("fdatasync {}: {}", tmp, std::strerror(errno)));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("rename {} -> {}: {}", tmp, path, std::strerror(errno)));
  }
  return true;
}

VectorIndex::VectorIndex(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("open {}: {}", path, std::strerror(errno)));
  Header h{};
  full_pread(fd_, &h, sizeof h, 0);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    ::close(fd_);
    throw std::runtime_error(fmt::format("{}: not an index file", path));
  }
  dim_ = h.dim, nlist_ = h.nlist, count_ = h.count;
  data_offset_ = header_bytes(dim_, nlist_);
  centroids_.resize(nlist_ * dim_);
  starts_.resize(nlist_ + 1);
  full_pread(fd_, centroids_.data(), centroids_.size() * sizeof(float), sizeof h);
  full_pread(fd_, starts_.data(), starts_.size() * sizeof(uint64_t),
             sizeof h + centroids_.size() * sizeof(float));
}

VectorIndex::~VectorIndex() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<uint32_t> VectorIndex::closest_lists(std::span<const float> query,
                                                 std::size_t nprobe) const {
  std::vector<float> score(nlist_);
  for (std::size_t c = 0; c < nlist_; ++c)
    score[c] = dot(query.data(), &centroids_[c * dim_], dim_);
  std::vector<uint32_t> order(nlist_);
  std::iota(order.begin(), order.end(), 0u);
  nprobe = std::min(nprobe, nlist_);
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(nprobe), order.end(),
                    [&](uint32_t a, uint32_t b) { return score[a] > score[b]; });
  order.resize(nprobe);
  return order;
}

std::vector<Neighbour> VectorIndex::scan_lists(std::span<const float> query,
                                               std::span<const uint32_t> lists,
                                               std::size_t k) const {
  if (query.size() != dim_) throw std::invalid_argument("query dimension does not match the index");
  std::vector<Neighbour> best;
  std::vector<float> buf(chunk_rows_ * dim_);
  for (uint32_t list : lists) {
    for (uint64_t row = starts_[list]; row < starts_[list + 1]; row += chunk_rows_) {
      std::size_t rows =
          static_cast<std::size_t>(std::min<uint64_t>(chunk_rows_, starts_[list + 1] - row));
      std::size_t bytes = rows * dim_ * sizeof(float);
      full_pread(fd_, buf.data(), bytes, data_offset_ + row * dim_ * sizeof(float));
      g_bytes_read.fetch_add(bytes, std::memory_order_relaxed);
      for (std::size_t r = 0; r < rows; ++r)
        offer(best, k, Neighbour{row + r, dot(query.data(), &buf[r * dim_], dim_)});
    }
  }
  return best;
}

void VectorIndex::drop_page_cache() const { ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED); }

void VectorIndex::read_cold() {
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);
  chunk_rows_ = std::max<std::size_t>(1, 4096 / (dim_ * sizeof(float)));
}

uint64_t VectorIndex::bytes_read() const { return g_bytes_read.load(std::memory_order_relaxed); }

std::vector<Neighbour> merge_top_k(std::vector<Neighbour> a, const std::vector<Neighbour>& b,
                                   std::size_t k) {
  for (const auto& n : b) offer(a, k, n);
  return a;
}

}  // namespace rag
