// SPDX-License-Identifier: Apache-2.0
// The closed loop: the daemon's verdict on each tenant's cache drives this cache. The daemon
// judges every (tenant, cache) it sees through the cache_lookup probe (breakdown or healthy,
// and a competition index: how much of the cache's churn the tenant causes); CacheFeedback asks
// for it (through the SDK's tailcause_sdk_cache_state, or any VerdictSource) and
//   - warms a tenant up when it enters breakdown (once per breakdown: the daemon's window is
//     long, and one warm-up loads what the recorded patterns can give);
//   - applies every tenant's competition index, and rebalances the quotas at once when one has
//     moved by kRebalanceStep or more (else the next maintain() applies it).
// Each warm-up and rebalance fires cache_action, so the daemon counts what the loop did.
// A tenant the daemon has not seen in its window (no lookups) keeps its index.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tailcause/cache/vector_cache.h"

namespace tailcause::cache {

struct DaemonVerdict {
  bool breakdown = false;
  double competition = 0;  // [0, 1]
  double miss_ratio = 0;   // (misses + stale) / lookups in the daemon's window
  uint64_t lookups = 0;    // in the daemon's window; 0: not seen
};

// The daemon's verdict on (tenant, cache); nullopt when no daemon answered.
using VerdictSource = std::function<std::optional<DaemonVerdict>(const std::string& tenant,
                                                                 const std::string& cache)>;

// Asks the daemon over its socket (libtailcause_sdk: $TAILCAUSE_BREAKER_SOCKET, else
// /run/tailcause/breaker.sock; 100 ms at most per question). In the library
// tailcause_cache_feedback, which links libtailcause_sdk.so (sdk_verdict_source.cpp).
VerdictSource sdk_verdict_source();

// One tenant's verdict for a round; nullopt: no daemon answered.
using TenantVerdict = std::pair<std::string, std::optional<DaemonVerdict>>;

struct FeedbackStats {
  uint64_t polls = 0;           // rounds
  uint64_t unanswered = 0;      // questions no daemon answered
  uint64_t breakdowns = 0;      // breakdowns seen begin
  uint64_t warmups = 0;         // warm-ups the loop started
  uint64_t warmed_entries = 0;  // entries they loaded
  uint64_t rebalances = 0;      // rebalances the loop started
};

class CacheFeedback {
 public:
  static constexpr double kRebalanceStep = 0.1;

  // `source` may be empty for a caller that brings its verdicts to follow() itself.
  CacheFeedback(VectorCache& cache, VerdictSource source = {});
  ~CacheFeedback();  // stops the thread
  CacheFeedback(const CacheFeedback&) = delete;
  CacheFeedback& operator=(const CacheFeedback&) = delete;

  // One round: asks the source about every tenant of the cache and follows the answers.
  void poll();
  // One round from verdicts the caller got itself (the Python binding asks through the
  // Python SDK): warm-ups and a rebalance as poll() would do.
  void follow(const std::vector<TenantVerdict>& verdicts);
  // A thread calling poll() every `period` until stop().
  void start(std::chrono::milliseconds period = std::chrono::seconds(1));
  void stop();

  FeedbackStats stats() const;

 private:
  VectorCache& cache_;
  VerdictSource source_;
  mutable std::mutex mu_;  // guards the members below
  std::map<std::string, bool> in_breakdown_;
  std::map<std::string, double> applied_;  // competition last applied per tenant
  FeedbackStats stats_;
  std::mutex poll_mu_;  // one round at a time
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tailcause::cache
