// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/stage_heatmap.h"

#include <algorithm>

#include "core/aggregate/histogram_conversion.h"

namespace tailcause::core {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

}  // namespace

StageHeatmap::StageHeatmap(StageHeatmapLimits limits) : limits_(limits) {}

uint64_t StageHeatmap::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

// The slot of `unix_s`, made when new; nullptr when it is older than the window. Stages
// arrive nearly in end order (one ring, several CPUs), so the search runs from the back.
StageHeatmap::Second* StageHeatmap::second_locked(int64_t unix_s) {
  if (seconds_.empty() || unix_s > seconds_.back().unix_s) {
    seconds_.push_back({unix_s, {}});
    // Seconds that fell out of the window, relative to the newest.
    while (seconds_.front().unix_s <= unix_s - limits_.window_s) {
      entries_ -= seconds_.front().entries.size();
      seconds_.pop_front();
    }
    return &seconds_.back();
  }
  if (unix_s <= seconds_.back().unix_s - limits_.window_s) return nullptr;
  auto it = std::lower_bound(seconds_.begin(), seconds_.end(), unix_s,
                             [](const Second& s, int64_t t) { return s.unix_s < t; });
  if (it == seconds_.end() || it->unix_s != unix_s) it = seconds_.insert(it, {unix_s, {}});
  return &*it;
}

void StageHeatmap::add(const std::string& tenant, const std::string& stage, int64_t end_unix_ns,
                       uint64_t wall_ns) {
  std::lock_guard lock(mu_);
  auto k = keys_.find({tenant, stage});
  if (k == keys_.end()) {
    if (keys_.size() >= limits_.max_keys) {
      ++dropped_;
      return;
    }
    k = keys_.emplace(std::make_pair(tenant, stage), static_cast<uint32_t>(names_.size())).first;
    names_.push_back(k->first);
  }
  Second* s = second_locked(floor_div(end_unix_ns, kSecondNs));
  if (!s) {
    ++dropped_;
    return;
  }
  const auto bucket = static_cast<uint32_t>(duration_bucket(wall_ns));
  for (Entry& e : s->entries) {
    if (e.key == k->second && e.bucket == bucket) {
      ++e.count;
      return;
    }
  }
  if (entries_ >= limits_.max_entries) {
    ++dropped_;
    return;
  }
  s->entries.push_back({k->second, bucket, 1});
  ++entries_;
}

std::vector<StageHeatmap::Cell> StageHeatmap::cells(const std::string& stage,
                                                    const std::optional<std::string>& tenant,
                                                    int64_t from_s, int64_t step_s,
                                                    size_t columns) const {
  std::lock_guard lock(mu_);
  std::vector<bool> wanted(names_.size());
  for (size_t i = 0; i < names_.size(); ++i)
    wanted[i] = names_[i].second == stage && (!tenant || names_[i].first == *tenant);
  std::map<std::pair<size_t, size_t>, uint64_t> counts;
  if (step_s <= 0) return {};
  const int64_t to_s = from_s + step_s * static_cast<int64_t>(columns);
  for (const Second& s : seconds_) {
    if (s.unix_s < from_s || s.unix_s >= to_s) continue;
    const auto column = static_cast<size_t>((s.unix_s - from_s) / step_s);
    for (const Entry& e : s.entries)
      if (wanted[e.key]) counts[{column, e.bucket}] += e.count;
  }
  std::vector<Cell> out;
  for (const auto& [at, n] : counts) out.push_back({at.first, at.second, n});
  return out;
}

}  // namespace tailcause::core
