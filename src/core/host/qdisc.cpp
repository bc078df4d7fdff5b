// SPDX-License-Identifier: Apache-2.0
#include "core/host/qdisc.h"

#include <fmt/format.h>

namespace tailcause::core {

QdiscDelta qdisc_delta(const QdiscCounters& before, const QdiscCounters& now) {
  const auto since = [](uint64_t a, uint64_t b) { return b >= a ? b - a : b; };
  QdiscDelta d;
  d.bytes = since(before.bytes, now.bytes);
  d.packets = since(before.packets, now.packets);
  d.drops = since(before.drops, now.drops);
  d.overlimits = since(before.overlimits, now.overlimits);
  d.backlog_bytes = now.backlog_bytes;
  d.qlen = now.qlen;
  d.backlog_grew = now.backlog_bytes > before.backlog_bytes;
  return d;
}

std::string qdisc_handle(uint32_t handle) {
  const uint32_t major = handle >> 16, minor = handle & 0xffff;
  return minor ? fmt::format("{:x}:{:x}", major, minor) : fmt::format("{:x}:", major);
}

bool qdisc_never_shapes(std::string_view kind) { return kind == "noqueue" || kind.empty(); }

}  // namespace tailcause::core
