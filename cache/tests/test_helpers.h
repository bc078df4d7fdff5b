// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the cache tests: seeded random unit vectors and a hand-driven clock.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace tailcause::cache::test {

inline std::vector<float> random_vector(std::size_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(dim);
  for (auto& x : v) x = n(rng);
  double s = 0;
  for (float x : v) s += x * x;
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

// A unit vector at exactly cosine `c` from unit vector `a` (in the plane of a and `other`).
inline std::vector<float> at_cosine(const std::vector<float>& a, double c, uint64_t seed) {
  auto b = random_vector(a.size(), seed);
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += a[i] * b[i];
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    b[i] = static_cast<float>(b[i] - d * a[i]);
    s += b[i] * b[i];
  }
  const double k = std::sqrt(1 - c * c) / std::sqrt(s);
  std::vector<float> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = static_cast<float>(c * a[i] + k * b[i]);
  return out;
}

struct FakeClock {
  std::shared_ptr<std::atomic<int64_t>> ns = std::make_shared<std::atomic<int64_t>>(1'000'000'000);
  std::function<int64_t()> fn() const {
    auto p = ns;
    return [p] { return p->load(); };
  }
  void advance_s(double s) { *ns += static_cast<int64_t>(s * 1e9); }
};

}  // namespace tailcause::cache::test
