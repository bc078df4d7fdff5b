// SPDX-License-Identifier: Apache-2.0
// Input validation for every vector the cache sees: a NaN, an infinity, a zero vector or a
// wrong dimension is a clear error (BadVector) and nothing is stored.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tailcause::cache {

class BadVector : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Returns the vector scaled to unit length (cosine similarity is then a dot product), or throws
// BadVector naming what is wrong.
std::vector<float> normalized_or_throw(std::span<const float> v, std::size_t dim);
// The same into `out` (resized), so a caller can reuse its buffer.
void normalize_into(std::span<const float> v, std::size_t dim, std::vector<float>& out);

// Dot product of two vectors of the same length (unit vectors: their cosine similarity).
float dot(const float* a, const float* b, std::size_t n);
// The same over int8 components, exact in 32 bits (n < 2^17).
int32_t dot_i8(const int8_t* a, const int8_t* b, std::size_t n);
// out[i] = v[i] * inv rounded to the nearest integer, ties to even (|v[i] * inv| < 2^31).
void quantise_to_grid(const float* v, std::size_t n, float inv, int32_t* out);

}  // namespace tailcause::cache
