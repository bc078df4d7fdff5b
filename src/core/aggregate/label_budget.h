// SPDX-License-Identifier: Apache-2.0
// Bounds label cardinality: the first K values of a label are kept, later ones fold into
// "__other__". Admission is sticky so that counters stay monotonic: a value never moves
// between its own series and "__other__" while it is seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace tailcause::core {

inline constexpr const char* kOtherLabel = "__other__";

class LabelBudget {
 public:
  // Folded values remembered for stickiness, at most: an agent inventing values (a request id in
  // a stage name) must not grow the daemon. Past it the memory starts afresh, and a value folded
  // again counts again in folded().
  static constexpr size_t kMaxRememberedFolds = 8192;

  explicit LabelBudget(size_t capacity) : capacity_(capacity) {}

  // The label value to export for `value`: itself if admitted, else "__other__".
  const std::string& admit(const std::string& value);

  // Distinct values folded into "__other__" so far (exported as a self-metric); monotonic,
  // forget() does not lower it.
  uint64_t folded() const { return folded_total_; }
  size_t admitted() const { return admitted_.size(); }
  size_t capacity() const { return capacity_; }
  size_t remembered_folds() const { return folded_.size(); }

  // Drops a value that no longer exists (a removed cgroup): an admitted one frees its slot, a
  // folded one is no longer remembered (so memory stays bounded under churn). If the value
  // shows up again it is a new one and competes for a slot like any other.
  void forget(const std::string& value);

 private:
  size_t capacity_;
  std::set<std::string> admitted_;
  std::set<std::string> folded_;  // folded values still alive, so that folding is sticky
  uint64_t folded_total_ = 0;
  std::string other_ = kOtherLabel;
};

// Folds a set of monotonic series keyed by label value under a LabelBudget, keeping the
// "__other__" series monotonic even when a folded series disappears (its last value is kept).
// T needs operator+= and a default value of zero.
template <typename T>
class FoldedSeries {
 public:
  explicit FoldedSeries(LabelBudget& budget) : budget_(budget) {}

  std::map<std::string, T> fold(const std::map<std::string, T>& current) {
    std::map<std::string, T> out;
    std::map<std::string, T> folded_now;
    for (const auto& [key, value] : current) {
      if (budget_.admit(key) == kOtherLabel) {
        folded_now[key] = value;
      } else {
        out[key] = value;
      }
    }
    // A folded series that vanished keeps contributing its last value.
    for (const auto& [key, value] : last_folded_) {
      if (!folded_now.count(key)) retired_ += value;
    }
    last_folded_ = std::move(folded_now);
    if (other_seen_ || !last_folded_.empty()) {
      other_seen_ = true;  // once exported, "__other__" never disappears
      T other = retired_;
      for (const auto& [key, value] : last_folded_) other += value;
      out[kOtherLabel] = other;
    }
    return out;
  }

 private:
  LabelBudget& budget_;
  std::map<std::string, T> last_folded_;
  T retired_{};
  bool other_seen_ = false;
};

}  // namespace tailcause::core
