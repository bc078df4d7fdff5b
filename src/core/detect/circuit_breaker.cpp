// SPDX-License-Identifier: Apache-2.0
#include "core/detect/circuit_breaker.h"

#include <algorithm>

#include <charconv>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace tailcause::core {

const char* breaker_state_name(BreakerState s) {
  return s == BreakerState::open ? "open" : "closed";
}

namespace {

// Keeps each field one token: escapes '%', whitespace and control bytes.
std::string encode(const std::string& s) {
  if (s.empty()) return "%";  // an empty field still needs a token
  std::string out;
  for (unsigned char ch : s) {
    if (ch == '%' || ch <= ' ' || ch == 0x7f)
      out += fmt::format("%{:02X}", ch);
    else
      out += static_cast<char>(ch);
  }
  return out;
}

std::optional<std::string> decode(const std::string& s) {
  if (s == "%") return std::string();
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;  // truncated escape
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || p != s.data() + i + 3) return std::nullopt;
    out += static_cast<char>(v);
    i += 2;
  }
  return out;
}

template <typename T>
bool parse_number(const std::string& s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

CircuitBreaker::CircuitBreaker(BreakerConfig config) : config_(config) {
  if (config_.trip_after == 0) config_.trip_after = 1;
}

bool CircuitBreaker::quiet(const Entry& e, uint64_t now_ns) const {
  return now_ns >= e.last_slow_ns && now_ns - e.last_slow_ns >= config_.quiet_ns;
}

BreakerState CircuitBreaker::observe(const std::string& tenant, const std::string& agent,
                                     uint64_t wall_ns, uint64_t now_ns, const std::string& stage) {
  auto key = std::make_pair(tenant, agent);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= config_.max_keys) return BreakerState::closed;
    it = entries_.emplace(std::move(key), Entry{}).first;
  }
  Entry& e = it->second;
  if (e.open && quiet(e, now_ns)) {
    e.open = false;
    e.streaks.clear();
    e.consecutive = 0;
  }
  // Streaks are counted per stage, so an agent whose generation is slow on every request
  // trips even though its fast embedding stages come in between. Stage names are few; a
  // pathological caller beyond kMaxStreaks shares one streak.
  auto streak = e.streaks.find(stage);
  if (streak == e.streaks.end()) {
    streak =
        e.streaks.emplace(e.streaks.size() < kMaxStreaks ? stage : std::string("\x1f"), 0).first;
  }
  // A streak restored from a saved state lost its stage name (key ""): every stage continues
  // or ends it.
  auto restored = stage.empty() ? e.streaks.end() : e.streaks.find("");
  if (wall_ns > config_.slow_ns) {
    e.last_slow_ns = now_ns;
    if (streak->second < UINT32_MAX) streak->second++;
    if (restored != e.streaks.end() && restored->second > 0) restored->second++;
  } else {
    streak->second = 0;  // an open breaker still waits out its quiet period
    if (restored != e.streaks.end()) restored->second = 0;
  }
  e.consecutive = 0;
  for (const auto& [_, n] : e.streaks) e.consecutive = std::max(e.consecutive, n);
  if (!e.open && e.consecutive >= config_.trip_after) {
    e.open = true;
    trips_++;
  }
  return e.open ? BreakerState::open : BreakerState::closed;
}

BreakerState CircuitBreaker::state(const std::string& tenant, const std::string& agent,
                                   uint64_t now_ns) const {
  auto it = entries_.find({tenant, agent});
  if (it == entries_.end() || !it->second.open || quiet(it->second, now_ns)) {
    return BreakerState::closed;
  }
  return BreakerState::open;
}

uint32_t CircuitBreaker::consecutive_slow(const std::string& tenant,
                                          const std::string& agent) const {
  auto it = entries_.find({tenant, agent});
  return it == entries_.end() ? 0 : it->second.consecutive;
}

uint64_t CircuitBreaker::retry_after_ns(const std::string& tenant, const std::string& agent,
                                        uint64_t now_ns) const {
  auto it = entries_.find({tenant, agent});
  if (it == entries_.end()) return 0;
  return view_of(it->first, it->second, now_ns).retry_after_ns;
}

BreakerView CircuitBreaker::view(const std::string& tenant, const std::string& agent,
                                 uint64_t now_ns) const {
  auto it = entries_.find({tenant, agent});
  if (it == entries_.end()) return BreakerView{tenant, agent};
  return view_of(it->first, it->second, now_ns);
}

BreakerView CircuitBreaker::view_of(const std::pair<std::string, std::string>& key, const Entry& e,
                                    uint64_t now_ns) const {
  BreakerView v{key.first, key.second, BreakerState::closed, e.consecutive, 0};
  if (e.open && !quiet(e, now_ns)) {
    v.state = BreakerState::open;
    // quiet() is false, so now_ns - last_slow_ns < quiet_ns, or the clock is behind last_slow_ns
    // (state from another boot not yet restart_clock()ed): say honestly how long that is.
    v.retry_after_ns = e.last_slow_ns + config_.quiet_ns - now_ns;
  } else if (e.open) {
    v.consecutive = 0;  // what observe() will find once it closes the breaker
  }
  return v;
}

std::vector<BreakerView> CircuitBreaker::entries(uint64_t now_ns) const {
  std::vector<BreakerView> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.push_back(view_of(key, e, now_ns));
  return out;
}

std::vector<BreakerView> CircuitBreaker::open_breakers(uint64_t now_ns) const {
  std::vector<BreakerView> out;
  for (const auto& [key, e] : entries_) {
    if (e.open && !quiet(e, now_ns)) out.push_back(view_of(key, e, now_ns));
  }
  return out;
}

void CircuitBreaker::close_quiet(uint64_t now_ns) {
  for (auto& [key, e] : entries_) {
    if (e.open && quiet(e, now_ns)) {
      e.open = false;
      e.consecutive = 0;
      e.streaks.clear();
    }
  }
}

void CircuitBreaker::restart_clock(uint64_t now_ns) {
  // Closed pairs' last_slow_ns is only read once they open again (which sets it), but an old
  // clock's value would look like the future on the new one: move them all.
  for (auto& [key, e] : entries_) e.last_slow_ns = now_ns;
}

void CircuitBreaker::clear() {
  entries_.clear();
  trips_ = 0;
}

std::string CircuitBreaker::serialize() const {
  std::string out = fmt::format("trips {}\n", trips_);
  for (const auto& [key, e] : entries_) {
    out += fmt::format("v1 {} {} {} {} {}\n", encode(key.first), encode(key.second), e.open ? 1 : 0,
                       e.consecutive, e.last_slow_ns);
  }
  return out;
}

bool CircuitBreaker::deserialize(const std::string& text) {
  std::map<std::pair<std::string, std::string>, Entry> entries;
  uint64_t trips = 0;
  std::istringstream lines(text);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string tok; fields >> tok;) f.push_back(tok);
    if (first) {
      if (f.size() != 2 || f[0] != "trips" || !parse_number(f[1], trips)) return false;
      first = false;
      continue;
    }
    if (f.empty()) continue;
    if (f.size() != 6 || f[0] != "v1") return false;
    auto tenant = decode(f[1]);
    auto agent = decode(f[2]);
    Entry e;
    unsigned open = 0;
    if (!tenant || !agent || !parse_number(f[3], open) || open > 1 ||
        !parse_number(f[4], e.consecutive) || !parse_number(f[5], e.last_slow_ns)) {
      return false;
    }
    e.open = open == 1;
    if (e.consecutive > 0) e.streaks[""] = e.consecutive;  // its stage name is not saved
    entries[{*tenant, *agent}] = e;
  }
  if (first) return false;  // not even a header
  entries_ = std::move(entries);
  trips_ = trips;
  return true;
}

}  // namespace tailcause::core
