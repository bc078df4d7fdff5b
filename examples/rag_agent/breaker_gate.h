// SPDX-License-Identifier: Apache-2.0
// Load shedding on tailcause's circuit breaker: asks the daemon (through the SDK's
// tailcause_sdk_breaker_state(), over its owner-only socket) whether this tenant's breaker is
// open, at most every 250 ms, so the arrival loop can ask on every request. When no daemon
// answers the agent serves normally: observability must never take the service down.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rag {

class BreakerGate {
 public:
  BreakerGate(std::string tenant, bool enabled) : tenant_(std::move(tenant)), enabled_(enabled) {}

  bool open();
  uint64_t checks() const { return checks_; }
  uint64_t open_seen() const { return open_seen_; }
  uint64_t unreadable() const { return unreadable_; }

 private:
  std::string tenant_;
  bool enabled_;
  bool open_ = false;
  std::chrono::steady_clock::time_point next_check_{};
  uint64_t checks_ = 0, open_seen_ = 0, unreadable_ = 0;
};

}  // namespace rag
