// SPDX-License-Identifier: Apache-2.0
// Turns the in-kernel histograms of bpf/hist.h into Prometheus cumulative buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/record/metrics.h"

namespace tailcause::core {

// Slot-wise sum, used to merge per-CPU copies or folded series.
void add_slots(std::span<uint64_t> into, std::span<const uint64_t> from);

// log2 slots: slot i holds values in [2^i, 2^(i+1)) units (slot 0 also holds 0), so every
// value of slot i is <= 2^(i+1) - 1 < le = 2^(i+1) * unit_seconds. Slots [first, last] get a
// bucket each; slots below `first` fall into the first bucket, slots above `last` only into +Inf.
HistogramData log2_to_buckets(std::span<const uint64_t> slots, uint64_t sum, double unit_seconds,
                              size_t first, size_t last);

// floor(log2(v)), 0 for v <= 1, at most `slots` - 1: the slot log2_slot() in bpf/common.bpf.h
// picks.
size_t log2_slot(uint64_t v, size_t slots);

// The stage and request duration histograms' slots [first, last] (of ns, 32.8 us .. 137 s),
// and the bucket a duration falls in: 0 .. (last - first) finite, then +Inf.
inline constexpr size_t kDurationFirstSlot = 14, kDurationLastSlot = 36;
size_t duration_bucket(uint64_t ns);
// Their finite upper bounds in seconds, as log2_to_buckets() labels them.
std::vector<double> duration_bounds();

// Linear slots: slot v counts the value v exactly; the last slot counts values >= it and so
// only reaches +Inf. Buckets le = 0, 1, ..., slots.size() - 2.
HistogramData linear_to_buckets(std::span<const uint64_t> slots, uint64_t sum);

}  // namespace tailcause::core
