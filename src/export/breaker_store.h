// SPDX-License-Identifier: Apache-2.0
// Keeps the circuit breakers over a daemon restart: a small text file, written atomically.
//
//   tailcause-breaker-state v1 boot_id=<boot id> monotonic_ns=<time of the save>
//   <core::CircuitBreaker::serialize()>
//
// Breaker times are CLOCK_MONOTONIC, which restarts with the kernel: a file from another boot
// (another /proc/sys/kernel/random/boot_id) is read at the time of its save, the breakers that
// were quiet by then close, and the others start their quiet period again now.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/host/clock.h"
#include "core/detect/circuit_breaker.h"

namespace tailcause::exporter {

struct BreakerStoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The running kernel's boot id; "unknown" when it cannot be read (it then matches no file).
std::string current_boot_id();

// Writes a temporary file (0600) next to `path`, fsyncs it, renames it over `path` and fsyncs
// the directory, which is created (0755) when missing. Throws BreakerStoreError; `path` is then
// unchanged.
void save_breaker_state(const core::CircuitBreaker& breaker, const std::string& path,
                        uint64_t now_ns = core::monotonic_ns(),
                        const std::string& boot_id = current_boot_id());

// Replaces `breaker`'s state with the file's. false when there is no file (a first start).
// Throws BreakerStoreError naming the file when it cannot be read or is corrupt; `breaker` is
// then left empty.
bool load_breaker_state(core::CircuitBreaker& breaker, const std::string& path, uint64_t now_ns,
                        const std::string& boot_id = current_boot_id());

}  // namespace tailcause::exporter
