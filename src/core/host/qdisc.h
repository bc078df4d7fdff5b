// SPDX-License-Identifier: Apache-2.0
// Traffic-control queueing disciplines (qdiscs) as the qdisc poller (probes/qdisc_stats.h) reads
// them over rtnetlink: their cumulative counters, the deltas between two readings that go to the
// evidence board, and their names as tc prints them. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/host/evidence_board.h"

namespace tailcause::core {

// A qdisc's statistics (TCA_STATS2: basic and queue), read now. Counters are cumulative since
// the qdisc was created; backlog and qlen are gauges.
struct QdiscCounters {
  uint64_t bytes = 0, packets = 0;
  uint64_t drops = 0, overlimits = 0;
  uint64_t backlog_bytes = 0, qlen = 0;
  bool operator==(const QdiscCounters&) const = default;
};

// The interval between two readings of the same qdisc. A counter that went down means the qdisc
// was replaced (same handle, counters from zero): its current value is the interval's.
QdiscDelta qdisc_delta(const QdiscCounters& before, const QdiscCounters& now);

// A handle as tc prints a qdisc's: "8001:", "0:" (the major number in hex; a qdisc's minor is 0,
// printed when not).
std::string qdisc_handle(uint32_t handle);

// Qdiscs that never hold traffic back and keep no statistics worth reading (noqueue: a virtual
// device's, no queue at all).
bool qdisc_never_shapes(std::string_view kind);

}  // namespace tailcause::core
