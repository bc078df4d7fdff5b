// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/exact_key.h"

#include <cmath>
#include <vector>

namespace tailcause::cache {
namespace {

constexpr uint64_t kPrime = 0x9e3779b97f4a7c15ULL;
// Grid points of a unit vector's components fit an int32 while 1 / step is below this.
constexpr float kInt32Grid = 1u << 30;

uint64_t finalise(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

uint64_t mix(uint64_t lane, uint64_t word) {
  lane = (lane ^ word) * kPrime;
  return lane ^ (lane >> 29);
}

// Each component rounded to the grid, as int32 (vectorised: no branch, no 64-bit convert).
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || \
    __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TC_KEY_CLONES
#else
#define TC_KEY_CLONES __attribute__((target_clones("avx2", "default")))
#endif
TC_KEY_CLONES void quantise(const float* v, std::size_t n, float inv, int32_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = v[i] * inv;
    out[i] = static_cast<int32_t>(x + std::copysign(0.5f, x));
  }
}

}  // namespace

uint64_t exact_key(std::string_view model_version, std::span<const float> unit_vector, float step) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : model_version) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  // Four independent lanes (a short dependency chain).
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  const float inv = 1.0f / step;
  const std::size_t n = unit_vector.size();
  if (inv < kInt32Grid) {
    // The usual grid: components quantised as int32, two to a 64-bit word, half the mixing.
    thread_local std::vector<int32_t> q;
    q.resize(n + 1);
    quantise(unit_vector.data(), n, inv, q.data());
    q[n] = 0;
    for (std::size_t w = 0; 2 * w < n; ++w) {
      const uint64_t word = static_cast<uint32_t>(q[2 * w]) |
                            static_cast<uint64_t>(static_cast<uint32_t>(q[2 * w + 1])) << 32;
      lane[w & 3] = mix(lane[w & 3], word);
    }
  } else {
    // A grid finer than 2^-30 (finer than a float resolves near 1): 64-bit grid points.
    for (std::size_t i = 0; i < n; ++i) {
      const float x = unit_vector[i] * inv;
      lane[i & 3] =
          mix(lane[i & 3], static_cast<uint64_t>(static_cast<int64_t>(x + std::copysign(0.5f, x))));
    }
  }
  return finalise(finalise(lane[0] ^ finalise(lane[1])) ^ finalise(lane[2] ^ finalise(lane[3])) ^
                  n);
}

}  // namespace tailcause::cache
