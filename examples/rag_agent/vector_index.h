// SPDX-License-Identifier: Apache-2.0
// An IVF (inverted file) index of unit vectors in one file per tenant. Queries read the probed
// lists with pread() on every search instead of holding the vectors in memory, so whether the
// page cache holds the file decides whether retrieval waits for the disk.
//
// File layout (little endian):
//   [0, 4096)   header: magic "ITRAGIX1", u32 dim, u32 nlist, u64 count, u64 seed,
//               then nlist centroids (dim floats each) and nlist+1 u64 list starts (row numbers)
//               -- the header block grows in 4096-byte steps when that does not fit
//   [data, ...) count rows of dim floats, grouped by list
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rag {

struct Neighbour {
  uint64_t row;
  float score;  // cosine similarity
};

// Writes the file for (count, dim, seed) unless an identical one is already there. The vectors
// are a Gaussian mixture around nlist random centres, so the IVF lists are meaningful.
// Returns true when it had to generate the file.
bool ensure_index_file(const std::string& path, std::size_t count, std::size_t dim, uint64_t seed);

class VectorIndex {
 public:
  explicit VectorIndex(const std::string& path);
  ~VectorIndex();
  VectorIndex(const VectorIndex&) = delete;
  VectorIndex& operator=(const VectorIndex&) = delete;

  std::size_t dim() const { return dim_; }
  std::size_t nlist() const { return nlist_; }
  std::size_t count() const { return count_; }

  // The `nprobe` lists whose centroids are closest to the query, best first.
  std::vector<uint32_t> closest_lists(std::span<const float> query, std::size_t nprobe) const;
  // Scans the given lists (pread per chunk) and returns the k best rows, best first.
  std::vector<Neighbour> scan_lists(std::span<const float> query, std::span<const uint32_t> lists,
                                    std::size_t k) const;
  // Drops this file's pages from the page cache (the cold-cache fault).
  void drop_page_cache() const;
  // The cold-cache fault's read pattern: no readahead (POSIX_FADV_RANDOM) and one 4 KiB pread
  // at a time, as an index served from a memory-mapped or paged store reads, so each list
  // costs a disk read per page once its pages are dropped.
  void read_cold();
  uint64_t bytes_read() const;

 private:
  int fd_ = -1;
  std::size_t dim_ = 0, nlist_ = 0, count_ = 0;
  uint64_t data_offset_ = 0;
  std::size_t chunk_rows_ = 512;  // rows per pread
  std::vector<float> centroids_;  // nlist x dim: small, kept in memory like a real IVF
  std::vector<uint64_t> starts_;  // nlist + 1
};

std::vector<Neighbour> merge_top_k(std::vector<Neighbour> a, const std::vector<Neighbour>& b,
                                   std::size_t k);

}  // namespace rag
