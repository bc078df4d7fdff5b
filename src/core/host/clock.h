// SPDX-License-Identifier: Apache-2.0
// The machine's clocks in nanoseconds, the one place that reads them: CLOCK_MONOTONIC (the
// clock of bpf_ktime_get_ns, of the records and of the detectors), CLOCK_REALTIME (Unix time),
// and the offset that turns the first into the second. Header-only: every layer uses it.
#pragma once

#include <time.h>

#include <cstdint>

namespace tailcause::core {

namespace clock_detail {
inline constexpr int64_t kNsPerSecond = 1'000'000'000;
}  // namespace clock_detail

// CLOCK_MONOTONIC in nanoseconds.
inline uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec * clock_detail::kNsPerSecond + ts.tv_nsec);
}

// CLOCK_REALTIME in nanoseconds since the Unix epoch.
inline int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * clock_detail::kNsPerSecond + ts.tv_nsec;
}

// CLOCK_REALTIME minus CLOCK_MONOTONIC: add it to a monotonic time to get Unix time.
inline int64_t realtime_minus_monotonic_ns() {
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<int64_t>(rt.tv_sec) - mono.tv_sec) * clock_detail::kNsPerSecond +
         (rt.tv_nsec - mono.tv_nsec);
}

}  // namespace tailcause::core
