// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/warmup.h"

#include <algorithm>
#include <cmath>

#include "tailcause/cache/vector_check.h"

namespace tailcause::cache {

void PatternLog::record(uint64_t key, std::span<const float> v) {
  auto it = patterns_.find(key);
  if (it == patterns_.end()) {
    if (patterns_.size() >= capacity_) return;  // full until the window rolls and prunes
    it = patterns_.emplace(key, Pattern{}).first;
    it->second.vector.assign(v.begin(), v.end());
  }
  ++it->second.window;
}

std::vector<uint64_t> PatternLog::roll_window() {
  // Rises are judged per semantic group, not per exact key: each paraphrase of a question has
  // its own key, so a topic that suddenly trends is many keys seen once. Group the patterns
  // seen in this window or the last one (the 1024 busiest) at cosine >= 0.82 and compare the
  // groups' counts.
  std::vector<std::pair<uint32_t, uint64_t>> active;
  for (const auto& [key, p] : patterns_)
    if (p.window || p.last_window) active.push_back({p.window + p.last_window, key});
  std::sort(active.begin(), active.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (active.size() > 1024) active.resize(1024);
  struct Group {
    const std::vector<float>* lead;
    uint64_t now = 0, before = 0;
    std::vector<uint64_t> members;
  };
  std::vector<Group> groups;
  for (const auto& [n, key] : active) {
    const Pattern& p = patterns_.at(key);
    Group* home = nullptr;
    for (auto& g : groups)
      if (dot(g.lead->data(), p.vector.data(), p.vector.size()) >= kWarmupGroupCosine) {
        home = &g;
        break;
      }
    if (!home) home = &groups.emplace_back(Group{&p.vector, 0, 0, {}});
    home->now += p.window;
    home->before += p.last_window;
    home->members.push_back(key);
  }
  std::vector<uint64_t> rising;
  for (const auto& g : groups)
    if (g.now >= kRiseMinCount && g.now >= kRiseFactor * g.before)
      for (uint64_t k : g.members)
        if (patterns_.at(k).window) rising.push_back(k);
  for (auto& [key, p] : patterns_) {
    p.history = p.history / 2 + p.window;
    p.last_window = p.window;
    p.window = 0;
  }
  // Keep the table bounded: drop the faded half once it fills up.
  if (patterns_.size() >= capacity_) {
    std::vector<double> w;
    for (const auto& [k, p] : patterns_) w.push_back(p.history);
    std::nth_element(w.begin(), w.begin() + w.size() / 2, w.end());
    const double median = w[w.size() / 2];
    absl::erase_if(patterns_, [&](const auto& kv) { return kv.second.history <= median; });
  }
  std::sort(rising.begin(), rising.end());
  return rising;
}

std::vector<WarmupGroup> plan_warmup(const PatternLog& log, const std::vector<uint64_t>& seeds) {
  const auto& all = log.patterns();
  std::vector<std::pair<double, uint64_t>> ranked;
  if (seeds.empty()) {
    for (const auto& [k, p] : all) ranked.push_back({p.weight(), k});
  } else {
    for (uint64_t k : seeds)
      if (auto it = all.find(k); it != all.end()) ranked.push_back({it->second.weight(), k});
  }
  // Most frequent first; ties by key so a plan is deterministic.
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (ranked.size() > kWarmupTopPatterns) ranked.resize(kWarmupTopPatterns);

  std::vector<WarmupGroup> groups;
  for (const auto& [w, key] : ranked) {
    const auto& v = all.at(key).vector;
    WarmupGroup* home = nullptr;
    for (auto& g : groups) {
      // Joins the group of the first (most frequent) member it is close to.
      const auto& lead = all.at(g.members.front()).vector;
      if (dot(lead.data(), v.data(), v.size()) >= kWarmupGroupCosine) {
        home = &g;
        break;
      }
    }
    if (!home) home = &groups.emplace_back();
    home->members.push_back(key);
  }
  for (auto& g : groups) {
    const std::size_t dim = all.at(g.members.front()).vector.size();
    g.centre.assign(dim, 0);
    for (uint64_t k : g.members) {
      const auto& v = all.at(k).vector;
      for (std::size_t i = 0; i < dim; ++i) g.centre[i] += v[i];
    }
    g.centre = normalized_or_throw(g.centre, dim);
    // The recorded patterns nearest to the centre (any pattern, not only the top ones).
    std::vector<std::pair<float, uint64_t>> near;
    for (const auto& [k, p] : all) near.push_back({dot(g.centre.data(), p.vector.data(), dim), k});
    const std::size_t n = std::min(kWarmupNeighbours, near.size());
    std::partial_sort(near.begin(), near.begin() + n, near.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (std::size_t i = 0; i < n; ++i) g.neighbours.push_back(near[i].second);
  }
  return groups;
}

std::size_t warmup_batch_size(uint64_t free_bytes, uint64_t entry_bytes) {
  if (entry_bytes == 0 || free_bytes < entry_bytes) return 0;
  const uint64_t fit = free_bytes / entry_bytes;
  if (fit < kWarmupMinBatch) return fit;  // what fits, even if under the minimum batch
  return std::min<uint64_t>(fit, kWarmupMaxBatch);
}

}  // namespace tailcause::cache
