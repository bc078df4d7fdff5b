// SPDX-License-Identifier: Apache-2.0
#include "daemon/signals.h"

#include <stdexcept>

namespace tailcause::daemon {
namespace {

static_assert(std::atomic<bool>::is_always_lock_free, "flags are set from a signal handler");
std::atomic<RunFlags*> target{nullptr};

void on_signal(int sig) {
  RunFlags* flags = target.load();
  if (!flags) return;
  if (sig == SIGHUP) {
    flags->reload = true;
  } else {
    flags->stop = true;
  }
}

}  // namespace

SignalRouting::SignalRouting(RunFlags& flags, bool reload) : reload_(reload) {
  RunFlags* none = nullptr;
  if (!target.compare_exchange_strong(none, &flags)) {
    throw std::logic_error("signals are already routed to another run");
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  if (reload_) sigaction(SIGHUP, &sa, &old_hup_);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &old_pipe_);
}

SignalRouting::~SignalRouting() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  if (reload_) sigaction(SIGHUP, &old_hup_, nullptr);
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  target = nullptr;
}

}  // namespace tailcause::daemon
