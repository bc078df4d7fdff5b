// SPDX-License-Identifier: Apache-2.0
#include "core/aggregate/label_budget.h"

namespace tailcause::core {

const std::string& LabelBudget::admit(const std::string& value) {
  // A value spelled like the fold label is exported as the fold itself, without a slot.
  if (value == other_) return other_;
  auto it = admitted_.find(value);
  if (it != admitted_.end()) return *it;
  if (!folded_.count(value) && admitted_.size() < capacity_) {
    return *admitted_.insert(value).first;
  }
  if (folded_.size() >= kMaxRememberedFolds && !folded_.count(value)) folded_.clear();
  if (folded_.insert(value).second) ++folded_total_;
  return other_;
}

void LabelBudget::forget(const std::string& value) {
  admitted_.erase(value);
  folded_.erase(value);
}

}  // namespace tailcause::core
