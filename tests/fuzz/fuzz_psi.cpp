// SPDX-License-Identifier: Apache-2.0
// libFuzzer: pressure stall files (/proc/pressure/memory, <cgroup>/memory.pressure). Totals or
// nullopt, never an exception; a result only from a bounded text, with averages in [0, 100];
// a final newline changes nothing; and what was read, printed back as the kernel prints it,
// reads back the same.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/host/psi.h"

namespace {

using tailcause::core::PsiLine;

bool sane(const PsiLine& l) { return std::isfinite(l.avg10) && l.avg10 >= 0 && l.avg10 <= 100; }

// The kernel's layout, with the average at a precision that round-trips; avg60/avg300 are
// checked by the parser but not kept, so any valid figure stands in for them.
std::string line(const char* kind, const PsiLine& l) {
  return fmt::format("{} avg10={:.17f} avg60=0.00 avg300=0.00 total={}\n", kind, l.avg10,
                     l.total_us);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto psi = parse_psi(text);
  if (text.size() < kMaxPsiText && parse_psi(std::string(text) + "\n") != psi) std::abort();
  if (!psi) return 0;
  if (text.size() > kMaxPsiText || !sane(psi->some) || (psi->full && !sane(*psi->full))) {
    std::abort();
  }
  std::string again = line("some", psi->some);
  if (psi->full) again += line("full", *psi->full);
  const auto back = parse_psi(again);
  if (!back || back->some.total_us != psi->some.total_us ||
      back->full.has_value() != psi->full.has_value() ||
      (psi->full && back->full->total_us != psi->full->total_us)) {
    std::abort();
  }
  return 0;
}
