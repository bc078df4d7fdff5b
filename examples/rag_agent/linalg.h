// SPDX-License-Identifier: Apache-2.0
// Small dense arithmetic shared by the agent's model and its vector index.
#pragma once

#include <cstddef>

namespace rag {

// Dot product with eight independent accumulators, so the compiler can vectorise it.
inline float dot(const float* a, const float* b, std::size_t n) {
  float acc[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float x : acc) s += x;
  return s;
}

}  // namespace rag
