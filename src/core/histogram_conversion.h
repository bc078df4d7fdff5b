// SPDX-License-Identifier: Apache-2.0
// Turns the in-kernel histograms of bpf/hist.h into Prometheus cumulative buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/metrics.h"

namespace tailcause::core {

// Slot-wise sum, used to merge per-CPU copies or folded series.
void add_slots(std::span<uint64_t> into, std::span<const uint64_t> from);

// log2 slots: slot i holds values in [2^i, 2^(i+1)) units (slot 0 also holds 0), so every
// value of slot i is <= 2^(i+1) - 1 < le = 2^(i+1) * unit_seconds. Slots [first, last] get a
// bucket each; slots below `first` fall into the first bucket, slots above `last` only into +Inf.
HistogramData log2_to_buckets(std::span<const uint64_t> slots, uint64_t sum, double unit_seconds,
                              size_t first, size_t last);

// Linear slots: slot v counts the value v exactly; the last slot counts values >= it and so
// only reaches +Inf. Buckets le = 0, 1, ..., slots.size() - 2.
HistogramData linear_to_buckets(std::span<const uint64_t> slots, uint64_t sum);

}  // namespace tailcause::core
