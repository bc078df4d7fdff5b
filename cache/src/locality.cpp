// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/locality.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace tailcause::cache {

void CoAccessTracker::record(uint32_t chunk, uint64_t t_ns) {
  const uint64_t w = t_ns / window_ns_;
  if (w != current_window_) {
    flush();
    current_window_ = w;
  }
  if (open_.size() < max_per_window_ && std::find(open_.begin(), open_.end(), chunk) == open_.end())
    open_.push_back(chunk);
}

void CoAccessTracker::flush() {
  std::sort(open_.begin(), open_.end());
  for (std::size_t i = 0; i < open_.size(); ++i) {
    ++windows_of_[open_[i]];
    for (std::size_t j = i + 1; j < open_.size(); ++j) ++together_[{open_[i], open_[j]}];
  }
  open_.clear();
}

double CoAccessTracker::ratio(uint32_t a, uint32_t b) const {
  if (a == b) return 1;
  auto it = together_.find({std::min(a, b), std::max(a, b)});
  if (it == together_.end()) return 0;
  const uint32_t na = windows_of_.at(a), nb = windows_of_.at(b);
  return static_cast<double>(it->second) / std::max(na, nb);
}

std::vector<std::vector<uint32_t>> CoAccessTracker::groups(double min_ratio) const {
  // Union-find over the chunks joined by a strong pair.
  std::unordered_map<uint32_t, uint32_t> parent;
  auto find = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [pair, n] : together_) {
    if (ratio(pair.first, pair.second) <= min_ratio) continue;
    for (uint32_t c : {pair.first, pair.second})
      if (!parent.contains(c)) parent[c] = c;
    uint32_t a = find(pair.first), b = find(pair.second);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::map<uint32_t, std::vector<uint32_t>> by_root;
  std::vector<uint32_t> keys;
  for (const auto& [c, p] : parent) keys.push_back(c);
  for (uint32_t c : keys) by_root[find(c)].push_back(c);
  std::vector<std::vector<uint32_t>> out;
  for (auto& [root, members] : by_root) {
    std::sort(members.begin(), members.end());
    out.push_back(std::move(members));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint32_t> layout_order(std::size_t n_chunks,
                                   const std::vector<std::vector<uint32_t>>& groups) {
  std::vector<uint32_t> order;
  std::vector<bool> placed(n_chunks, false);
  for (const auto& g : groups)
    for (uint32_t c : g)
      if (c < n_chunks && !placed[c]) {
        placed[c] = true;
        order.push_back(c);
      }
  for (uint32_t c = 0; c < n_chunks; ++c)
    if (!placed[c]) order.push_back(c);
  return order;
}

void write_layout(const std::string& path, std::span<const float> rows, std::size_t dim,
                  const std::vector<uint32_t>& order) {
  if (dim == 0 || rows.size() % dim != 0)
    throw std::invalid_argument("rows are not a whole number of vectors of the dimension");
  const std::size_t n = rows.size() / dim;
  std::vector<bool> seen(n, false);
  if (order.size() != n)
    throw std::invalid_argument("layout order is not a permutation of the rows");
  for (uint32_t r : order) {
    if (r >= n || seen[r])
      throw std::invalid_argument("layout order is not a permutation of the rows");
    seen[r] = true;
  }
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!f) throw std::runtime_error("cannot write " + path);
  for (uint32_t r : order)
    if (std::fwrite(rows.data() + r * dim, sizeof(float), dim, f.get()) != dim)
      throw std::runtime_error("short write to " + path);
  if (std::fflush(f.get()) != 0) throw std::runtime_error("cannot flush " + path);
}

}  // namespace tailcause::cache
