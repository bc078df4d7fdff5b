// SPDX-License-Identifier: Apache-2.0
// The one way tailcause hears SIGINT/SIGTERM (stop) and SIGHUP (reload): the handlers only set
// flags, which the daemon's loop (or a collection's) reads between polls. A test sets the same
// flags directly (Daemon::request_stop) and needs no signal.
#pragma once

#include <signal.h>

#include <atomic>

namespace tailcause::daemon {

struct RunFlags {
  std::atomic<bool> stop{false};
  std::atomic<bool> reload{false};
};

class SignalRouting {
 public:
  // SIGINT and SIGTERM set flags.stop; with `reload`, SIGHUP sets flags.reload (without, SIGHUP
  // keeps its action). SIGPIPE is ignored (a peer that went away is an error, not a death).
  // The previous actions come back on destruction. One routing at a time per process: a second
  // throws std::logic_error.
  SignalRouting(RunFlags& flags, bool reload);
  ~SignalRouting();
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;

 private:
  bool reload_;
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{}, old_pipe_{};
};

}  // namespace tailcause::daemon
