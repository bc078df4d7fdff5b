// SPDX-License-Identifier: Apache-2.0
#include "breaker_gate.h"

#include <tailcause/sdk_lib.h>

namespace rag {

namespace {
constexpr auto kRecheck = std::chrono::milliseconds(250);
constexpr const char* kAgent = "rag-agent";  // as pipeline.cpp names the agent to the SDK
}  // namespace

bool BreakerGate::open() {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return open_;
  next_check_ = now + kRecheck;
  ++checks_;
  uint32_t retry_ms = 0;
  const int state = tailcause_sdk_breaker_state(tenant_.c_str(), kAgent, &retry_ms);
  if (state < 0) {
    ++unreadable_;
    open_ = false;
    return false;
  }
  open_ = state == 1;
  if (open_) ++open_seen_;
  return open_;
}

}  // namespace rag
