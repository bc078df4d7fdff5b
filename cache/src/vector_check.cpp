// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/vector_check.h"

#include <cmath>
#include <string>

namespace tailcause::cache {

// AVX2 where the CPU has it (an ifunc picks the clone at load time), SSE2 otherwise. Not under
// the sanitizers: ThreadSanitizer crashes in an ifunc resolver that runs before it is set up.
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || \
    __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TC_DOT_CLONES
#else
#define TC_DOT_CLONES __attribute__((target_clones("avx2", "default")))
#endif
TC_DOT_CLONES float dot(const float* a, const float* b, std::size_t n) {
  // Eight independent sums: the compiler vectorises them without -ffast-math.
  float s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

std::vector<float> normalized_or_throw(std::span<const float> v, std::size_t dim) {
  if (v.size() != dim)
    throw BadVector("vector has " + std::to_string(v.size()) + " dimensions, the cache expects " +
                    std::to_string(dim));
  double norm = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]))
      throw BadVector("vector component " + std::to_string(i) + " is " +
                      (std::isnan(v[i]) ? "NaN" : "infinite"));
    norm += static_cast<double>(v[i]) * v[i];
  }
  if (norm == 0 || !std::isfinite(norm))
    throw BadVector(norm == 0 ? "zero vector (no direction to compare)" : "vector norm overflows");
  std::vector<float> out(v.begin(), v.end());
  const double inv = 1.0 / std::sqrt(norm);
  for (float& x : out) x = static_cast<float>(x * inv);
  return out;
}

}  // namespace tailcause::cache
