// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/diagnostics.h"

#include <algorithm>

namespace tailcause::cache {

void MissedKeys::record(uint64_t key) {
  if (auto it = counts_.find(key); it != counts_.end()) {
    ++it->second;
    return;
  }
  if (counts_.size() < capacity_) {
    counts_.emplace(key, 1);
    return;
  }
  // Space-Saving: the new key takes over the smallest counter, plus one.
  auto min = std::min_element(counts_.begin(), counts_.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  uint64_t c = min->second + 1;
  counts_.erase(min);
  counts_.emplace(key, c);
}

std::vector<MissedKeys::Item> MissedKeys::top(std::size_t n) const {
  std::vector<Item> out;
  for (const auto& [k, c] : counts_) out.push_back({k, c});
  std::sort(out.begin(), out.end(), [](const Item& a, const Item& b) {
    return a.misses != b.misses ? a.misses > b.misses : a.key < b.key;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

LayoutReport vector_layout(std::size_t dim, std::size_t element_bytes) {
  LayoutReport r{};
  r.vector_bytes = dim * element_bytes;
  r.cache_line_aligned = r.vector_bytes % kCacheLineBytes == 0;
  // Packed back to back, an unaligned vector can start anywhere in a line.
  r.lines_touched =
      (r.vector_bytes + kCacheLineBytes - 1) / kCacheLineBytes + (r.cache_line_aligned ? 0 : 1);
  return r;
}

}  // namespace tailcause::cache
