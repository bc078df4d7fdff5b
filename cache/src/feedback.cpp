// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/feedback.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tailcause::cache {

CacheFeedback::CacheFeedback(VectorCache& cache, VerdictSource source)
    : cache_(cache), source_(std::move(source)) {}

CacheFeedback::~CacheFeedback() { stop(); }

void CacheFeedback::poll() {
  if (!source_) return;
  std::vector<TenantVerdict> verdicts;
  for (std::string& tenant : cache_.tenants()) {
    auto v = source_(tenant, cache_.options().name);
    verdicts.emplace_back(std::move(tenant), v);
  }
  follow(verdicts);
}

void CacheFeedback::follow(const std::vector<TenantVerdict>& verdicts) {
  std::lock_guard round(poll_mu_);
  // A verdict about a tenant this cache does not have creates nothing.
  const auto known = cache_.tenants();
  std::vector<std::string> warm;
  bool rebalance = false;
  uint64_t unanswered = 0, breakdowns = 0;
  for (const auto& [tenant, v] : verdicts) {
    if (!std::binary_search(known.begin(), known.end(), tenant)) continue;
    if (!v) {
      unanswered++;
      continue;
    }
    if (v->lookups == 0) continue;  // not in the daemon's window: nothing to follow
    if (!(v->competition >= 0 && v->competition <= 1)) continue;  // a source gone wrong
    std::lock_guard lock(mu_);
    bool& was = in_breakdown_[tenant];
    if (v->breakdown && !was) {
      warm.push_back(tenant);
      breakdowns++;
    }
    was = v->breakdown;
    auto [it, first] = applied_.try_emplace(tenant, v->competition);
    if (first || std::abs(it->second - v->competition) >= kRebalanceStep) {
      it->second = v->competition;
      rebalance = true;
    }
    cache_.set_competition(tenant, v->competition);
  }
  // Outside our lock: a warm-up runs the application's loader.
  uint64_t warmups = 0, entries = 0;
  for (const auto& tenant : warm) {
    entries += cache_.warm_up(tenant);
    warmups++;
  }
  if (rebalance) cache_.rebalance();
  std::lock_guard lock(mu_);
  stats_.polls++;
  stats_.unanswered += unanswered;
  stats_.breakdowns += breakdowns;
  stats_.warmups += warmups;
  stats_.warmed_entries += entries;
  stats_.rebalances += rebalance;
}

void CacheFeedback::start(std::chrono::milliseconds period) {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this, period] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

void CacheFeedback::stop() {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

FeedbackStats CacheFeedback::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace tailcause::cache
