// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/vector_check.h"

#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
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
#define TC_NO_CLONES
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

namespace {

int32_t dot_i8_plain(const int8_t* a, const int8_t* b, std::size_t i, std::size_t n) {
  int32_t r = 0;
  for (; i < n; ++i) r += int32_t{a[i]} * int32_t{b[i]};
  return r;
}

#if defined(__x86_64__) && !defined(TC_NO_CLONES)
// 16 components a step: sign-extend to 16 bits, multiply and add pairs into 32-bit lanes
// (vpmaddwd). The compiler's own vectorisation of the plain loop takes four times as many
// instructions (128-bit, a widening per step).
__attribute__((target("avx2"))) int32_t dot_i8_avx2(const int8_t* a, const int8_t* b,
                                                    std::size_t n) {
  __m256i acc = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i x =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256i y =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
  int32_t r = 0;
  for (int32_t v : lanes) r += v;
  return r + dot_i8_plain(a, b, i, n);
}
// Eight components a step. The plain loop does not vectorise (nearbyint is a libm call), and
// the exact key of every lookup starts here.
__attribute__((target("avx2"))) void quantise_avx2(const float* v, std::size_t n, float inv,
                                                   int32_t* out) {
  const __m256 scale = _mm256_set1_ps(inv);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // vcvtps2dq rounds as the MXCSR says: to nearest, ties to even, as nearbyint does.
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + i), scale));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), q);
  }
  for (; i < n; ++i) out[i] = static_cast<int32_t>(std::nearbyint(v[i] * inv));
}
// Asked once, at load (cpu_init first: this may run before libgcc's own constructor).
const bool kHasAvx2 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}();
#endif

}  // namespace

int32_t dot_i8(const int8_t* a, const int8_t* b, std::size_t n) {
#if defined(__x86_64__) && !defined(TC_NO_CLONES)
  if (kHasAvx2) return dot_i8_avx2(a, b, n);
#endif
  return dot_i8_plain(a, b, 0, n);
}

void quantise_to_grid(const float* v, std::size_t n, float inv, int32_t* out) {
#if defined(__x86_64__) && !defined(TC_NO_CLONES)
  if (kHasAvx2) return quantise_avx2(v, n, inv, out);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(std::nearbyint(v[i] * inv));
}

namespace {

// The sum of squares in eight double lanes, with no branch per component, so it vectorises: a
// NaN or an infinity anywhere makes it non-finite (the square of a finite float cannot overflow
// a double).
TC_DOT_CLONES double sum_of_squares(const float* v, std::size_t n) {
  double lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t j = 0; j < 8; ++j)
      lanes[j] += static_cast<double>(v[i + j]) * static_cast<double>(v[i + j]);
  double sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) sum += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  return sum;
}

TC_DOT_CLONES void scale(const float* v, std::size_t n, double factor, float* out) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(static_cast<double>(v[i]) * factor);
}

}  // namespace

void normalize_into(std::span<const float> v, std::size_t dim, std::vector<float>& out) {
  if (v.size() != dim)
    throw BadVector("vector has " + std::to_string(v.size()) + " dimensions, the cache expects " +
                    std::to_string(dim));
  const double norm = sum_of_squares(v.data(), v.size());
  if (!std::isfinite(norm)) {  // only now look for the culprit
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (!std::isfinite(v[k]))
        throw BadVector("vector component " + std::to_string(k) + " is " +
                        (std::isnan(v[k]) ? "NaN" : "infinite"));
    }
    throw BadVector("vector norm overflows");
  }
  if (norm == 0) throw BadVector("zero vector (no direction to compare)");
  out.resize(v.size());
  scale(v.data(), v.size(), 1.0 / std::sqrt(norm), out.data());
}
std::vector<float> normalized_or_throw(std::span<const float> v, std::size_t dim) {
  std::vector<float> out;
  normalize_into(v, dim, out);
  return out;
}

}  // namespace tailcause::cache
