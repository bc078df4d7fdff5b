// SPDX-License-Identifier: Apache-2.0
// Locality: chunks (rows of an index file) that are read together within 150 ms windows are
// grouped when their co-occurrence ratio, windows with both / windows with the more frequent
// one, exceeds 0.7 (so both directions are strong); groups are the connected components of
// those pairs. layout_order() puts each group's rows next to each other, so one retrieval
// touches fewer pages; write_layout() writes an index file in that order.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tailcause::cache {

inline constexpr uint64_t kCoAccessWindowNs = 150'000'000;
inline constexpr double kCoAccessRatio = 0.7;

class CoAccessTracker {
 public:
  explicit CoAccessTracker(uint64_t window_ns = kCoAccessWindowNs, std::size_t max_per_window = 64)
      : window_ns_(window_ns), max_per_window_(max_per_window) {}

  // One access of `chunk` at `t_ns` (monotonic). Accesses must come in time order.
  void record(uint32_t chunk, uint64_t t_ns);
  // Closes the open window (call before reading the groups).
  void flush();

  // Groups of at least two chunks, each sorted; groups ordered by their smallest chunk.
  std::vector<std::vector<uint32_t>> groups(double min_ratio = kCoAccessRatio) const;
  double ratio(uint32_t a, uint32_t b) const;

 private:
  uint64_t window_ns_;
  std::size_t max_per_window_;
  uint64_t current_window_ = UINT64_MAX;
  std::vector<uint32_t> open_;
  std::unordered_map<uint32_t, uint32_t> windows_of_;           // chunk -> windows it appears in
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> together_;  // (a < b) -> windows with both
};

// A permutation of 0..n_chunks-1: each group contiguous (in the groups' order), then the
// ungrouped chunks in their original order. new position i holds old row order[i].
std::vector<uint32_t> layout_order(std::size_t n_chunks,
                                   const std::vector<std::vector<uint32_t>>& groups);

// Writes `rows` (n x dim floats, row-major) to `path` in `order`; throws std::runtime_error on
// an I/O error and std::invalid_argument when order is not a permutation.
void write_layout(const std::string& path, std::span<const float> rows, std::size_t dim,
                  const std::vector<uint32_t>& order);

}  // namespace tailcause::cache
