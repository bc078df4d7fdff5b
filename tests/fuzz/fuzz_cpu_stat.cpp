// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the cgroup files read for CPU throttling (cpu.stat, cpu.max, cpu.cfs_*, cpu.weight,
// cpu.shares). A container can write nothing there, but a kernel may print what it likes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/host/cpu_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_cpu_stat(text);
  (void)parse_cpu_max(text);
  (void)parse_cpu_weight(text);
  if (auto shares = parse_cpu_shares_as_weight(text)) (void)weight_from_shares(*shares);
  const auto split = text.find('\n');
  if (split != std::string_view::npos) {
    (void)parse_cfs_limit(text.substr(0, split), text.substr(split + 1));
  }
  return 0;
}
