// SPDX-License-Identifier: Apache-2.0
// The one stop/reload signal mechanism: handlers only set the run's flags, SIGHUP is taken
// only where a reload is wanted, and the previous actions come back afterwards.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <stdexcept>

#include "daemon/signals.h"

namespace tailcause::daemon {
namespace {

std::atomic<int> previous_handler_calls{0};
void previous_handler(int) { ++previous_handler_calls; }

// Installs previous_handler for `sig` for the test's lifetime.
struct PreviousAction {
  int sig;
  struct sigaction saved {};
  explicit PreviousAction(int s) : sig(s) {
    struct sigaction sa {};
    sa.sa_handler = previous_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &saved);
  }
  ~PreviousAction() { sigaction(sig, &saved, nullptr); }
};

TEST(DaemonSignals, StopSignalsSetTheStopFlagOnly) {
  PreviousAction keep_int(SIGINT), keep_term(SIGTERM);
  RunFlags flags;
  SignalRouting routing(flags, /*reload=*/false);
  raise(SIGTERM);
  EXPECT_TRUE(flags.stop);
  EXPECT_FALSE(flags.reload);
  flags.stop = false;
  raise(SIGINT);
  EXPECT_TRUE(flags.stop);
  EXPECT_EQ(previous_handler_calls, 0);
}

TEST(DaemonSignals, HangUpReloadsOnlyWhereAsked) {
  PreviousAction keep(SIGHUP);
  {
    RunFlags flags;
    SignalRouting routing(flags, /*reload=*/true);
    raise(SIGHUP);
    EXPECT_TRUE(flags.reload);
    EXPECT_FALSE(flags.stop);
  }
  previous_handler_calls = 0;
  {
    RunFlags flags;
    SignalRouting routing(flags, /*reload=*/false);
    raise(SIGHUP);  // a collection does not reload: SIGHUP keeps its own action
    EXPECT_FALSE(flags.reload);
    EXPECT_EQ(previous_handler_calls, 1);
  }
}

TEST(DaemonSignals, PreviousActionsComeBackAndSigpipeIsIgnoredMeanwhile) {
  PreviousAction keep_term(SIGTERM), keep_pipe(SIGPIPE);
  previous_handler_calls = 0;
  {
    RunFlags flags;
    SignalRouting routing(flags, true);
    raise(SIGPIPE);  // ignored: the process is still here, nothing recorded
    EXPECT_EQ(previous_handler_calls, 0);
    EXPECT_FALSE(flags.stop);
  }
  raise(SIGTERM);
  raise(SIGPIPE);
  EXPECT_EQ(previous_handler_calls, 2);
}

TEST(DaemonSignals, OneRoutingAtATime) {
  PreviousAction keep_int(SIGINT), keep_term(SIGTERM), keep_hup(SIGHUP);
  RunFlags first, second;
  SignalRouting routing(first, true);
  EXPECT_THROW(SignalRouting(second, true), std::logic_error);
  raise(SIGTERM);
  EXPECT_TRUE(first.stop) << "the failed second routing must not have taken the signals";
  EXPECT_FALSE(second.stop);
}

}  // namespace
}  // namespace tailcause::daemon
