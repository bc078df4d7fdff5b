// SPDX-License-Identifier: Apache-2.0
// Durations as people type them on the command line: "30s", "5m", "2h", "1d", "1h30m",
// "250ms". Each part is a whole number and a unit (ns, us, ms, s, m, h, d); parts add up.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>

namespace tailcause::core {

struct DurationError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The largest duration accepted: what fits in a signed 64-bit count of nanoseconds (about 292
// years), so callers may subtract it from a Unix time in ns without overflow.
inline constexpr uint64_t kMaxDurationNs = static_cast<uint64_t>(INT64_MAX);

// Returns nanoseconds. Throws DurationError with a message that quotes `text` and says what
// was wrong: empty, negative, a number without a unit, an unknown unit, or too large.
uint64_t parse_duration_ns(std::string_view text);

}  // namespace tailcause::core
