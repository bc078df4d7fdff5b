// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/exact_key.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tailcause/cache/vector_check.h"

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

// Not SLP-vectorised: without a 64-bit vector multiply (AVX2 has none) the compiler's
// vectorised lanes take three multiplies each and ran 1.5x slower than scalar imul.
#if defined(__GNUC__) && !defined(__clang__)
#define TC_SCALAR_LANES __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define TC_SCALAR_LANES
#endif

}  // namespace

TC_SCALAR_LANES uint64_t exact_key(std::string_view model_version,
                                   std::span<const float> unit_vector, float step) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : model_version) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  // Eight independent lanes: a mix waits on the one before it in its lane only, 16 deep for a
  // 256-component vector.
  constexpr std::size_t kLanes = 8;
  uint64_t lane[kLanes];
  for (std::size_t k = 0; k < kLanes; ++k) lane[k] = h ^ k;
  const float inv = 1.0f / step;
  const std::size_t n = unit_vector.size();
  if (inv < kInt32Grid) {
    // The usual grid: components quantised as int32, two to a 64-bit word, half the mixing.
    // Zeros pad the last step; the length is hashed in at the end.
    thread_local std::vector<int32_t> q;
    const std::size_t words = (n + 2 * kLanes - 1) / (2 * kLanes) * kLanes;
    q.resize(2 * words);
    quantise_to_grid(unit_vector.data(), n, inv, q.data());
    std::fill(q.begin() + static_cast<std::ptrdiff_t>(n), q.end(), 0);  // only the padding
    for (std::size_t w = 0; w < words; w += kLanes) {
      // Unrolled, the lanes live in registers; a loop over an array index keeps them on the
      // stack, and each mix then waits on a store (2x slower).
#pragma GCC unroll 8
      for (std::size_t k = 0; k < kLanes; ++k)
        lane[k] = mix(lane[k], static_cast<uint32_t>(q[2 * (w + k)]) |
                                   uint64_t{static_cast<uint32_t>(q[2 * (w + k) + 1])} << 32);
    }
  } else {
    // A grid finer than 2^-30 (finer than a float resolves near 1): 64-bit grid points.
    for (std::size_t i = 0; i < n; ++i)
      lane[i % kLanes] =
          mix(lane[i % kLanes],
              static_cast<uint64_t>(static_cast<int64_t>(std::nearbyint(unit_vector[i] * inv))));
  }
  // Each lane finalised on its own (in parallel), then folded with the length.
  uint64_t folded = n;
  for (std::size_t k = 0; k < kLanes; ++k) folded ^= finalise(lane[k]);
  return finalise(folded);
}

}  // namespace tailcause::cache
