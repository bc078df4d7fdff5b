#include "core/label_budget.h"

namespace infertrace::core {

const std::string& LabelBudget::admit(const std::string& value) {
  auto it = admitted_.find(value);
  if (it != admitted_.end()) return *it;
  if (!folded_.count(value) && admitted_.size() < capacity_) {
    return *admitted_.insert(value).first;
  }
  folded_.insert(value);
  return other_;
}

void LabelBudget::forget(const std::string& value) { admitted_.erase(value); }

}  // namespace infertrace::core
