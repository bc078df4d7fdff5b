// SPDX-License-Identifier: Apache-2.0
// Per-tenant memory quotas from a competition index in [0, 1] (how much of a tenant's misses
// come from other tenants' use of shared memory). Below 0.3 the tenant may grow, linearly up to
// 3x its base at 0; above 0.3 its share shrinks linearly to the floor, 20% of the base, at 1.
// The growth of all tenants together is capped by the cache's total budget.
#pragma once

#include <cstdint>
#include <vector>

namespace tailcause::cache {

inline constexpr double kLowCompetition = 0.3;
inline constexpr double kQuotaFloor = 0.2;
inline constexpr double kQuotaCeiling = 3.0;

// The quota one tenant gets alone (no budget cap); throws std::invalid_argument when competition
// is outside [0, 1] or not a number.
uint64_t target_quota(uint64_t base_bytes, double competition);

struct QuotaInput {
  uint64_t base_bytes;
  double competition;
};
// Every tenant's quota: target_quota, then, if their sum exceeds `budget_bytes`, the part above
// each growing tenant's base scaled down (never below the base or the floor).
std::vector<uint64_t> balance_quotas(const std::vector<QuotaInput>& tenants, uint64_t budget_bytes);

}  // namespace tailcause::cache
