// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/quota.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tailcause::cache {

uint64_t target_quota(uint64_t base_bytes, double competition) {
  if (!(competition >= 0 && competition <= 1))
    throw std::invalid_argument("competition index must be in [0, 1]");
  double factor;
  if (competition < kLowCompetition)
    factor = 1 + (kQuotaCeiling - 1) * (kLowCompetition - competition) / kLowCompetition;
  else
    factor = 1 - (1 - kQuotaFloor) * (competition - kLowCompetition) / (1 - kLowCompetition);
  return static_cast<uint64_t>(std::llround(static_cast<double>(base_bytes) * factor));
}

std::vector<uint64_t> balance_quotas(const std::vector<QuotaInput>& tenants,
                                     uint64_t budget_bytes) {
  std::vector<uint64_t> out;
  uint64_t total = 0, growth = 0, fixed = 0;
  for (const auto& t : tenants) {
    out.push_back(target_quota(t.base_bytes, t.competition));
    total += out.back();
    if (out.back() > t.base_bytes) {
      growth += out.back() - t.base_bytes;
      fixed += t.base_bytes;
    } else {
      fixed += out.back();
    }
  }
  if (total <= budget_bytes || growth == 0) return out;
  // Scale every tenant's growth by the same factor so the sum meets the budget.
  const double room = budget_bytes > fixed ? static_cast<double>(budget_bytes - fixed) : 0.0;
  const double scale = room / static_cast<double>(growth);
  for (std::size_t i = 0; i < tenants.size(); ++i)
    if (out[i] > tenants[i].base_bytes)
      out[i] = tenants[i].base_bytes +
               static_cast<uint64_t>(std::llround((out[i] - tenants[i].base_bytes) * scale));
  return out;
}

}  // namespace tailcause::cache
