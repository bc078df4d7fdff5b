// SPDX-License-Identifier: Apache-2.0
// libFuzzer: durations as typed on the command line. A value or a DurationError, never more
// than kMaxDurationNs, and a value's canonical "<n>ns" spelling parses back to it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/config/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  uint64_t ns = 0;
  try {
    ns = parse_duration_ns(text);
  } catch (const DurationError&) {
    return 0;
  }
  if (ns > kMaxDurationNs) std::abort();
  if (parse_duration_ns(std::to_string(ns) + "ns") != ns) std::abort();
  return 0;
}
