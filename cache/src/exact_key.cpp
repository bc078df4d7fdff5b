// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/exact_key.h"

#include <cmath>

namespace tailcause::cache {
namespace {

constexpr uint64_t kPrime = 0x9e3779b97f4a7c15ULL;

uint64_t finalise(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

uint64_t exact_key(std::string_view model_version, std::span<const float> unit_vector, float step) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : model_version) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  // Four independent lanes (a short dependency chain), each component rounded to the grid.
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  const float inv = 1.0f / step;
  const std::size_t n = unit_vector.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float x = unit_vector[i] * inv;
    const auto q = static_cast<int64_t>(x + (x >= 0 ? 0.5f : -0.5f));
    uint64_t& l = lane[i & 3];
    l = (l ^ static_cast<uint64_t>(q)) * kPrime;
    l ^= l >> 29;
  }
  return finalise(finalise(lane[0] ^ finalise(lane[1])) ^ finalise(lane[2] ^ finalise(lane[3])) ^
                  n);
}

}  // namespace tailcause::cache
