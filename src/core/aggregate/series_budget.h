// SPDX-License-Identifier: Apache-2.0
// Bounds the number of series one family holds (a map keyed by label combinations), where series
// are created: at most `capacity` keys have a series of their own, every other key's data goes
// to the family's one overflow series (all labels "__other__"). Which keys keep a series follows
// their weight (time or count, halved at each rebalance so that it tracks the recent past): a
// folded key whose weight passes twice the lightest kept key's takes that key's place at the
// next rebalance, and the owner merges the evicted series into the overflow.
//
// Folded keys are remembered in a candidates table of `capacity` entries, kept by the
// space-saving algorithm (a newcomer replaces the lightest candidate and inherits its weight as
// possible error; promotion looks at the weight less that error), so memory stays bounded
// however many keys an agent invents.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace tailcause::core {

template <typename Key>
class SeriesBudget {
 public:
  // A candidate must weigh this many times the lightest kept key to take its place.
  static constexpr double kHysteresis = 2.0;

  explicit SeriesBudget(size_t capacity) : capacity_(capacity) {}

  // Whether `key` has (or now gets, while there is room) a series of its own; adds `weight` to
  // it either way. A false answer means: this observation goes to the overflow series.
  bool keeps(const Key& key, double weight) {
    if (auto it = kept_.find(key); it != kept_.end()) {
      it->second += weight;
      return true;
    }
    if (kept_.size() < capacity_) {
      kept_.emplace(key, weight);
      return true;
    }
    note_candidate(key, weight);
    ++folded_;
    return false;
  }

  // Swaps candidates heavier than kHysteresis times the lightest kept keys for them, heaviest
  // first, and halves every weight. Returns the keys that lost their series: the owner merges
  // each into the overflow series (and counts it with count_folded()). A promoted key starts a
  // new series at its next observation; what it had before stays in the overflow.
  std::vector<Key> rebalance() {
    std::vector<Key> evicted;
    for (;;) {
      auto heavy = heaviest_candidate();
      auto light = lightest_kept();
      if (heavy == candidates_.end() || light == kept_.end()) break;
      const double heavy_weight = heavy->second.weight - heavy->second.error;
      if (heavy_weight <= kHysteresis * light->second) break;
      evicted.push_back(light->first);
      kept_.erase(light);
      kept_.emplace(heavy->first, heavy_weight);
      candidates_.erase(heavy);
    }
    for (auto& [key, weight] : kept_) weight /= 2;
    for (auto& [key, c] : candidates_) {
      c.weight /= 2;
      c.error /= 2;
    }
    return evicted;
  }

  // Observations of evicted series, now in the overflow, are folded observations too.
  void count_folded(uint64_t observations) { folded_ += observations; }
  // Observations that went to the overflow series, monotonic.
  uint64_t folded() const { return folded_; }
  size_t size() const { return kept_.size(); }
  size_t capacity() const { return capacity_; }
  bool contains(const Key& key) const { return kept_.count(key) > 0; }
  // Folded keys remembered as candidates: at most capacity().
  size_t candidates() const { return candidates_.size(); }

 private:
  struct Candidate {
    double weight = 0;
    double error = 0;  // weight inherited from the candidate it replaced: perhaps not its own
  };

  void note_candidate(const Key& key, double weight) {
    if (auto it = candidates_.find(key); it != candidates_.end()) {
      it->second.weight += weight;
      return;
    }
    if (candidates_.size() < std::max<size_t>(capacity_, 1)) {
      candidates_.emplace(key, Candidate{weight, 0});
      return;
    }
    const auto lightest = std::min_element(
        candidates_.begin(), candidates_.end(),
        [](const auto& a, const auto& b) { return a.second.weight < b.second.weight; });
    const double inherited = lightest->second.weight;
    candidates_.erase(lightest);
    candidates_.emplace(key, Candidate{inherited + weight, inherited});
  }

  typename std::map<Key, Candidate>::iterator heaviest_candidate() {
    return std::max_element(
        candidates_.begin(), candidates_.end(), [](const auto& a, const auto& b) {
          return a.second.weight - a.second.error < b.second.weight - b.second.error;
        });
  }

  typename std::map<Key, double>::iterator lightest_kept() {
    return std::min_element(kept_.begin(), kept_.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
  }

  size_t capacity_;
  std::map<Key, double> kept_;
  std::map<Key, Candidate> candidates_;
  uint64_t folded_ = 0;
};

}  // namespace tailcause::core
