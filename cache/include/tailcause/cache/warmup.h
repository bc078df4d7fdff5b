// SPDX-License-Identifier: Apache-2.0
// Warm-up from recorded query patterns. The log counts each exact key per window (decayed
// history + this window); a warm-up plan takes the 50 most frequent patterns (or the rising
// ones), groups them greedily at cosine >= 0.82, and proposes each group's centre (the
// normalised mean) plus the 3 recorded patterns nearest to it. Batches are 16..64 vectors,
// sized to the free memory of the tenant's quota.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <absl/container/flat_hash_map.h>

namespace tailcause::cache {

inline constexpr std::size_t kWarmupTopPatterns = 50;
inline constexpr float kWarmupGroupCosine = 0.82f;
inline constexpr std::size_t kWarmupNeighbours = 3;
inline constexpr std::size_t kWarmupMinBatch = 16;
inline constexpr std::size_t kWarmupMaxBatch = 64;
inline constexpr double kColdHitRate = 0.30;
inline constexpr double kRiseFactor = 3.0;    // a rise by 200%
inline constexpr uint32_t kRiseMinCount = 3;  // fewer than this in a window is noise

class PatternLog {
 public:
  explicit PatternLog(std::size_t capacity = 4096) : capacity_(capacity) {}

  void record(uint64_t key, std::span<const float> unit_vector);
  // Ends the window: returns the keys of this window's patterns whose group (cosine >= 0.82)
  // was seen at least 3x as often as in the last window (and at least kRiseMinCount times),
  // then folds the window into the decayed history.
  std::vector<uint64_t> roll_window();
  std::size_t size() const { return patterns_.size(); }
  void clear() { patterns_.clear(); }

  struct Pattern {
    std::vector<float> vector;
    double history = 0;  // decayed count of past windows
    uint32_t window = 0, last_window = 0;
    double weight() const { return history + window; }
  };
  const absl::flat_hash_map<uint64_t, Pattern>& patterns() const { return patterns_; }

 private:
  std::size_t capacity_;
  absl::flat_hash_map<uint64_t, Pattern> patterns_;
};

struct WarmupGroup {
  std::vector<float> centre;         // unit vector
  std::vector<uint64_t> members;     // pattern keys, most frequent first
  std::vector<uint64_t> neighbours;  // the patterns nearest the centre (up to 3)
};

// Groups the top patterns (by weight; `seeds`, when not empty, restricts the candidates to
// those keys, e.g. the rising ones) at cosine >= 0.82.
std::vector<WarmupGroup> plan_warmup(const PatternLog& log,
                                     const std::vector<uint64_t>& seeds = {});

// How many entries of `entry_bytes` the next batch loads: the free memory in entries, clamped
// to 16..64; 0 when not even one entry fits.
std::size_t warmup_batch_size(uint64_t free_bytes, uint64_t entry_bytes);

}  // namespace tailcause::cache
