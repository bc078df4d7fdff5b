// SPDX-License-Identifier: Apache-2.0
// The daemon's verdicts through libtailcause_sdk.so's socket client: apart from feedback.cpp so
// that the cache library itself (and its C ABI) does not need the SDK's library.
#include <tailcause/sdk_lib.h>

#include "tailcause/cache/feedback.h"

namespace tailcause::cache {

VerdictSource sdk_verdict_source() {
  return [](const std::string& tenant, const std::string& cache) -> std::optional<DaemonVerdict> {
    tailcause_sdk_cache_view view{};
    const int rc = tailcause_sdk_cache_state(tenant.c_str(), cache.c_str(), &view);
    if (rc < 0) return std::nullopt;
    return DaemonVerdict{rc == 1, view.competition_permille / 1000.0, view.miss_permille / 1000.0,
                         view.lookups};
  };
}

}  // namespace tailcause::cache
