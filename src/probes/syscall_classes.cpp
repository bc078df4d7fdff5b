// SPDX-License-Identifier: Apache-2.0
#include "probes/syscall_classes.h"

#include <sys/syscall.h>

#include <cstddef>

namespace tailcause::probes {
namespace {

// System calls added since 5.1 have one number on every architecture (asm-generic, 424 on):
// the ones older C library headers may not name yet.
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif
#ifndef SYS_futex_wait
#define SYS_futex_wait 455
#endif
#ifndef SYS_futex_requeue
#define SYS_futex_requeue 456
#endif

SyscallTable build() {
  SyscallTable t{};
  auto mark = [&t](long nr, uint8_t flag) {
    if (nr >= 0 && nr < static_cast<long>(t.size())) t[nr] |= flag;
  };
  for (long nr : {SYS_futex, SYS_futex_waitv, SYS_futex_wait, SYS_futex_requeue}) {
    mark(nr, TAILCAUSE_SYS_LOCK);
  }
#ifdef SYS_poll
  mark(SYS_poll, TAILCAUSE_SYS_POLL);
#endif
  mark(SYS_ppoll, TAILCAUSE_SYS_POLL);
#ifdef SYS_select
  mark(SYS_select, TAILCAUSE_SYS_WAIT_MANY);
#endif
#ifdef SYS_epoll_wait
  mark(SYS_epoll_wait, TAILCAUSE_SYS_WAIT_MANY);
#endif
  for (long nr : {SYS_pselect6, SYS_epoll_pwait, SYS_epoll_pwait2}) {
    mark(nr, TAILCAUSE_SYS_WAIT_MANY);
  }
  for (long nr : {SYS_connect, SYS_accept, SYS_accept4, SYS_sendto, SYS_recvfrom, SYS_sendmsg,
                  SYS_recvmsg, SYS_recvmmsg, SYS_sendmmsg}) {
    mark(nr, TAILCAUSE_SYS_SOCKET);
  }
  for (long nr : {SYS_read, SYS_write, SYS_readv, SYS_writev}) mark(nr, TAILCAUSE_SYS_FD_IO);
  for (long nr : {SYS_write, SYS_pwrite64, SYS_writev, SYS_pwritev, SYS_pwritev2, SYS_fallocate,
                  SYS_copy_file_range}) {
    mark(nr, TAILCAUSE_SYS_WRITES_PAGES);
  }
  return t;
}

}  // namespace

const SyscallTable& syscall_classes() {
  static const SyscallTable table = build();
  return table;
}

void fill_syscall_classes(volatile uint8_t (&rodata)[TAILCAUSE_SYSCALL_SLOTS]) {
  const SyscallTable& t = syscall_classes();
  for (std::size_t i = 0; i < t.size(); ++i) rodata[i] = t[i];
}

}  // namespace tailcause::probes
