// SPDX-License-Identifier: Apache-2.0
// Diagnostics a breakdown report can use: the most-missed key hashes (Space-Saving top-K, a
// bounded table whose counts over-estimate by at most the evicted minimum), and whether a
// vector's size is a whole number of cache lines.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tailcause::cache {

class MissedKeys {
 public:
  explicit MissedKeys(std::size_t capacity = 64) : capacity_(capacity) {}
  void record(uint64_t key);
  struct Item {
    uint64_t key;
    uint64_t misses;
  };
  std::vector<Item> top(std::size_t n) const;  // most missed first
  void clear() { counts_.clear(); }

 private:
  std::size_t capacity_;
  std::unordered_map<uint64_t, uint64_t> counts_;
};

inline constexpr std::size_t kCacheLineBytes = 64;

struct LayoutReport {
  std::size_t vector_bytes;
  bool cache_line_aligned;    // vector_bytes is a multiple of 64
  std::size_t lines_touched;  // cache lines one unaligned vector may straddle, worst case
};
LayoutReport vector_layout(std::size_t dim, std::size_t element_bytes = sizeof(float));

}  // namespace tailcause::cache
