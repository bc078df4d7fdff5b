// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/admission.h"

#include <algorithm>
#include <bit>

namespace tailcause::cache {
namespace {

constexpr uint8_t kMaxCount = 15;
constexpr uint64_t kSeeds[4] = {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL,
                                0x2545f4914f6cdd1dULL};

uint64_t row_hash(uint64_t key, int row) {
  uint64_t h = (key ^ kSeeds[row]) * 0xff51afd7ed558ccdULL;
  return h ^ (h >> 32);
}

}  // namespace

FrequencySketch::FrequencySketch(std::size_t capacity) {
  std::size_t width = std::bit_ceil(std::max<std::size_t>(capacity, 64));
  mask_ = width - 1;
  counters_.assign(width * 4, 0);
  doorkeeper_.assign(width * 4 / 64, 0);
  sample_size_ = width * 10;  // TinyLFU: reset after ~10 accesses per counter
}

void FrequencySketch::record(uint64_t key) {
  // Doorkeeper: the first sighting only sets a bit.
  const std::size_t bits = doorkeeper_.size() * 64;
  const uint64_t b = row_hash(key, 0) % bits;
  uint64_t& word = doorkeeper_[b / 64];
  const uint64_t bit = 1ULL << (b % 64);
  if (!(word & bit)) {
    word |= bit;
  } else {
    // Conservative update: raise only the smallest counters.
    uint8_t* c[4];
    uint8_t lo = kMaxCount;
    for (int r = 0; r < 4; ++r) {
      c[r] = &counters_[r * (mask_ + 1) + (row_hash(key, r) & mask_)];
      lo = std::min(lo, *c[r]);
    }
    if (lo < kMaxCount)
      for (auto* p : c)
        if (*p == lo) ++*p;
  }
  if (++samples_ >= sample_size_) age();
}

uint32_t FrequencySketch::estimate(uint64_t key) const {
  const std::size_t bits = doorkeeper_.size() * 64;
  const uint64_t b = row_hash(key, 0) % bits;
  if (!(doorkeeper_[b / 64] & (1ULL << (b % 64)))) return 0;
  uint8_t lo = kMaxCount;
  for (int r = 0; r < 4; ++r)
    lo = std::min(lo, counters_[r * (mask_ + 1) + (row_hash(key, r) & mask_)]);
  return 1u + lo;
}

void FrequencySketch::age() {
  for (auto& c : counters_) c >>= 1;
  std::fill(doorkeeper_.begin(), doorkeeper_.end(), 0);
  samples_ = 0;
}

}  // namespace tailcause::cache
