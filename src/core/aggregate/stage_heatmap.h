// SPDX-License-Identifier: Apache-2.0
// The web UI's stage latency heatmap: stages counted by the second their stage ended (Unix
// time, the journal's clock) and the bucket of their wall time (the stage duration
// histogram's log2 buckets), for the last `window_s` seconds. Keyed by end time like the
// journal's glitches, a cell's glitches are exactly those /api/v1/glitches lists for its
// seconds [from, to) and wall times [lo, hi): no slack for when a scrape happened to count them.
// Bounded (keys and entries; beyond, dropped and counted). Thread-safe: the pipeline adds,
// the API reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tailcause::core {

struct StageHeatmapLimits {
  uint32_t window_s = 900;
  size_t max_keys = 4096;        // (tenant, stage) pairs
  size_t max_entries = 1 << 20;  // (second, key, bucket) counts, about 12 bytes each
};

class StageHeatmap {
 public:
  explicit StageHeatmap(StageHeatmapLimits limits = {});

  void add(const std::string& tenant, const std::string& stage, int64_t end_unix_ns,
           uint64_t wall_ns);

  struct Cell {
    size_t column = 0, bucket = 0;
    uint64_t count = 0;
  };
  // Counts of `stage` (all tenants, or one) in `columns` columns of `step_s` seconds from
  // `from_s`: column i holds stages that ended in [from_s + i*step_s, from_s + (i+1)*step_s).
  std::vector<Cell> cells(const std::string& stage, const std::optional<std::string>& tenant,
                          int64_t from_s, int64_t step_s, size_t columns) const;
  const StageHeatmapLimits& limits() const { return limits_; }
  uint64_t dropped() const;  // not counted: a key or entry over its bound, or older than the window

 private:
  struct Entry {
    uint32_t key;
    uint32_t bucket;
    uint32_t count;
  };
  struct Second {
    int64_t unix_s;
    std::vector<Entry> entries;
  };
  Second* second_locked(int64_t unix_s);

  StageHeatmapLimits limits_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint32_t> keys_;  // (tenant, stage) -> key
  std::vector<std::pair<std::string, std::string>> names_;        // key -> (tenant, stage)
  std::deque<Second> seconds_;                                    // oldest first, sparse
  size_t entries_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace tailcause::core
