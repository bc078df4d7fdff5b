// A circuit breaker per (tenant, agent): opens after N consecutive stages slower than a
// threshold (default 3 over 200 ms) and closes again once no slow stage has been seen for a
// quiet period. Its state serialises to a string so it can outlive a restart. Pure: no I/O.
// Times are the caller's clock (CLOCK_MONOTONIC in the daemon): state restored after a reboot
// should be given a clock that continues, or be restored with reset_times().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace infertrace::core {

struct BreakerConfig {
  uint64_t slow_ns = 200'000'000;  // a stage slower than this counts as slow
  uint32_t trip_after = 3;         // consecutive slow stages that open the breaker
  uint64_t quiet_ns = 30'000'000'000;  // open -> closed after this long without a slow stage
  size_t max_keys = 4096;          // (tenant, agent) pairs kept; beyond, new pairs are ignored
};

enum class BreakerState : uint8_t { closed, open };
const char* breaker_state_name(BreakerState s);

class CircuitBreaker {
 public:
  explicit CircuitBreaker(BreakerConfig config = {});

  // Records a stage's latency at `now_ns`; returns the state after it.
  BreakerState observe(const std::string& tenant, const std::string& agent, uint64_t wall_ns,
                       uint64_t now_ns);
  // The state at `now_ns` (an open breaker whose quiet period has passed reads closed).
  BreakerState state(const std::string& tenant, const std::string& agent, uint64_t now_ns) const;
  uint32_t consecutive_slow(const std::string& tenant, const std::string& agent) const;
  uint64_t trips() const { return trips_; }
  size_t keys() const { return entries_.size(); }

  // A header "trips <n>", then one line per pair: "v1 <tenant> <agent> <open 0|1>
  // <consecutive> <last_slow_ns>", tenant and agent percent-encoded ("%" alone: empty). deserialize() replaces the state; false (state left
  // unchanged) on malformed input.
  std::string serialize() const;
  bool deserialize(const std::string& text);

 private:
  struct Entry {
    bool open = false;
    uint32_t consecutive = 0;
    uint64_t last_slow_ns = 0;
  };
  bool quiet(const Entry& e, uint64_t now_ns) const;

  BreakerConfig config_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;
  uint64_t trips_ = 0;
};

}  // namespace infertrace::core
