// SPDX-License-Identifier: Apache-2.0
// Pressure stall information (PSI): the kernel's account of the time tasks waited for a
// resource, node-wide in /proc/pressure/{cpu,memory,io} and per v2 cgroup in
// <cgroup>/{cpu,memory,io}.pressure. Both print
//
//   some avg10=0.72 avg60=0.13 avg300=0.02 total=192769
//   full avg10=0.54 avg60=0.09 avg300=0.02 total=143753
//
// "some": the share of time at least one task was stalled; "full": all non-idle tasks were at
// once. total is cumulative microseconds; the averages are percentages over 10/60/300 s.
// Pure: the memory family reads the file and hands its text here. Parsed by hand: no Debian
// library reads PSI files.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

struct PsiLine {
  uint64_t total_us = 0;  // cumulative stall time
  double avg10 = 0;       // percent of the last 10 s, in [0, 100]
  bool operator==(const PsiLine&) const = default;
};

struct Psi {
  PsiLine some;
  std::optional<PsiLine> full;  // absent where the kernel prints none (node-wide cpu, old kernels)
  bool operator==(const Psi&) const = default;
};

// The text of a pressure file. nullopt unless it has exactly one "some" line and at most one
// "full" line, each a run of key=value fields with avg10 and total among them (avg60 and avg300
// checked when present, unknown keys skipped), and nothing else but blank lines. Texts over
// kMaxPsiText bytes, numbers out of range (total past 2^64, an average outside [0, 100]) and
// anything not in the kernel's format are refused rather than guessed at.
std::optional<Psi> parse_psi(std::string_view text);

inline constexpr size_t kMaxPsiText = 1024;

}  // namespace tailcause::core
