// SPDX-License-Identifier: Apache-2.0
// The syscall table the BPF programs classify system calls by (bpf/syscall_class.h), built from
// this build's own <sys/syscall.h>, so the BPF code names no architecture's numbers.
#pragma once

#include <array>
#include <cstdint>

#include "bpf/syscall_class.h"

namespace tailcause::probes {

using SyscallTable = std::array<uint8_t, TAILCAUSE_SYSCALL_SLOTS>;

// enum tailcause_syscall_flag bits by native syscall number; calls this architecture lacks
// (poll, select, epoll_wait on arm64) are simply absent.
const SyscallTable& syscall_classes();

// Copies the table into a skeleton's .rodata array (before load).
void fill_syscall_classes(volatile uint8_t (&rodata)[TAILCAUSE_SYSCALL_SLOTS]);

}  // namespace tailcause::probes
