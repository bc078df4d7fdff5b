// SPDX-License-Identifier: Apache-2.0
// TinyLFU admission: a doorkeeper bit set in front of a count-min sketch of 4-bit-like counters
// (uint8, saturating at 15), halved every `sample_size` recorded accesses so old popularity
// fades. A key seen once only sets its doorkeeper bit, so a burst of one-off queries never
// builds frequency and cannot push out entries that are asked for again and again.
#pragma once

#include <cstdint>
#include <vector>

namespace tailcause::cache {

class FrequencySketch {
 public:
  // `capacity`: about how many distinct keys matter (the cache's entry count).
  explicit FrequencySketch(std::size_t capacity = 4096);

  void record(uint64_t key);
  // Estimated recent access count (doorkeeper included): 0 for a key never seen.
  uint32_t estimate(uint64_t key) const;
  // TinyLFU's rule: admit the candidate only if it is strictly more frequent than the victim.
  bool admit(uint64_t candidate, uint64_t victim) const {
    return estimate(candidate) > estimate(victim);
  }

 private:
  void age();
  std::size_t mask_;
  std::vector<uint8_t> counters_;     // 4 rows of mask_ + 1
  std::vector<uint64_t> doorkeeper_;  // bit set, (mask_ + 1) * 4 bits
  std::size_t samples_ = 0, sample_size_;
};

}  // namespace tailcause::cache
