// SPDX-License-Identifier: Apache-2.0
// Wall-time samples the agent measures itself, per stage, summarised as count / p50 / p99.
// Bounded: past kMaxSamples a reservoir keeps a uniform sample, so long runs stay small.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rag {

class LatencySamples {
 public:
  static constexpr std::size_t kMaxSamples = 100000;
  void add(double seconds);
  void add_error() { ++errors_; }
  uint64_t count() const { return count_; }
  // {"count", "errors", "p50_seconds", "p99_seconds", "max_seconds", "mean_seconds"}
  nlohmann::json summary() const;

 private:
  std::vector<double> samples_;
  uint64_t count_ = 0, errors_ = 0;
  double sum_ = 0, max_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
};

// Thread-safe map of named series ("prompt", ..., "request").
class StageStats {
 public:
  void add(const std::string& name, double seconds);
  void add_error(const std::string& name);
  nlohmann::json summary() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, LatencySamples> series_;
};

}  // namespace rag
