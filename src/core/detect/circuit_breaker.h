// SPDX-License-Identifier: Apache-2.0
// A circuit breaker per (tenant, agent): opens after N consecutive stages of one stage name
// slower than a threshold (default 3 over 200 ms) and closes again once no slow stage has been seen
// for a quiet period. Its state serialises to a string so it can outlive a restart. Pure: no I/O.
// Times are the caller's clock (CLOCK_MONOTONIC in the daemon). State restored after a reboot
// (a monotonic clock that started again) must be followed by close_quiet(<time of the save>)
// and restart_clock(<now>): open breakers then wait a whole quiet period again
// (export/breaker_store does this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tailcause::core {

struct BreakerConfig {
  uint64_t slow_ns = 200'000'000;      // a stage slower than this counts as slow
  uint32_t trip_after = 3;             // consecutive slow stages that open the breaker
  uint64_t quiet_ns = 30'000'000'000;  // open -> closed after this long without a slow stage
  size_t max_keys = 4096;              // (tenant, agent) pairs kept; beyond, new pairs are ignored
};

enum class BreakerState : uint8_t { closed, open };
const char* breaker_state_name(BreakerState s);

// One (tenant, agent) pair as read at some time.
struct BreakerView {
  std::string tenant, agent;
  BreakerState state = BreakerState::closed;
  uint32_t consecutive = 0;     // consecutive slow stages so far
  uint64_t retry_after_ns = 0;  // until an open breaker may close; 0 when closed
};

class CircuitBreaker {
 public:
  explicit CircuitBreaker(BreakerConfig config = {});

  // Records a stage's latency at `now_ns`; returns the state after it.
  // Streaks count per `stage`: the breaker trips when one stage name is slow trip_after
  // times in a row, whatever the pair's other stages do in between.
  BreakerState observe(const std::string& tenant, const std::string& agent, uint64_t wall_ns,
                       uint64_t now_ns, const std::string& stage = "");
  // The state at `now_ns` (an open breaker whose quiet period has passed reads closed).
  BreakerState state(const std::string& tenant, const std::string& agent, uint64_t now_ns) const;
  uint32_t consecutive_slow(const std::string& tenant, const std::string& agent) const;
  // Time from `now_ns` until the pair's quiet period ends (a further slow stage extends it);
  // 0 when closed.
  uint64_t retry_after_ns(const std::string& tenant, const std::string& agent,
                          uint64_t now_ns) const;
  // The pair at `now_ns` (a closed, zero view for a pair never seen).
  BreakerView view(const std::string& tenant, const std::string& agent, uint64_t now_ns) const;
  // Every pair (open_breakers(): the open ones), ordered by (tenant, agent), read at `now_ns`.
  std::vector<BreakerView> entries(uint64_t now_ns) const;
  std::vector<BreakerView> open_breakers(uint64_t now_ns) const;

  // Closes the open breakers whose quiet period has passed at `now_ns` (observe() does this
  // lazily per pair; a restore from another boot needs it at the time of the save).
  void close_quiet(uint64_t now_ns);
  // The clock restarted (a reboot): every open breaker starts its quiet period again at
  // `now_ns`, on the new clock. Consecutive counts are kept.
  void restart_clock(uint64_t now_ns);
  // Forgets every pair and the trip count.
  void clear();
  uint64_t trips() const { return trips_; }
  size_t keys() const { return entries_.size(); }

  // A header "trips <n>", then one line per pair: "v1 <tenant> <agent> <open 0|1>
  // <consecutive> <last_slow_ns>", tenant and agent percent-encoded ("%" alone: empty).
  // deserialize() replaces the state; false (state left unchanged) on malformed input.
  std::string serialize() const;
  bool deserialize(const std::string& text);

 private:
  static constexpr size_t kMaxStreaks = 32;
  struct Entry {
    bool open = false;
    uint32_t consecutive = 0;  // the longest streak of slow stages of one stage name
    uint64_t last_slow_ns = 0;
    std::map<std::string, uint32_t> streaks;  // by stage name (not persisted)
  };
  bool quiet(const Entry& e, uint64_t now_ns) const;
  BreakerView view_of(const std::pair<std::string, std::string>& key, const Entry& e,
                      uint64_t now_ns) const;

  BreakerConfig config_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;
  uint64_t trips_ = 0;
};

}  // namespace tailcause::core
