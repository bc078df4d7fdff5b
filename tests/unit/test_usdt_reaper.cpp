// SPDX-License-Identifier: Apache-2.0
// The link reaper closes what it is handed on its own threads, then runs each batch's `done`
// once, after the last descriptor of that batch is closed; drain() waits for all of it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

#include "probes/usdt_reaper.h"

namespace tailcause::probes {
namespace {

// A pipe whose read end is handed to the reaper: writing to the write end fails with EPIPE
// once that read end is closed.
struct Pipe {
  Fd read, write;
  Pipe() {
    int fds[2];
    if (pipe(fds) == 0) {
      read.reset(fds[0]);
      write.reset(fds[1]);
    }
  }
  bool read_end_closed() const {
    const char c = 0;
    return ::write(write.get(), &c, 1) < 0 && errno == EPIPE;
  }
};

TEST(LinkReaper, ClosesEveryBatchThenRunsItsDoneOnce) {
  signal(SIGPIPE, SIG_IGN);
  LinkReaper reaper(4);
  std::vector<Pipe> pipes(40);
  std::atomic<int> done_a{0}, done_b{0};
  std::atomic<bool> a_closed_first{true};
  std::vector<Fd> a, b;
  for (size_t i = 0; i < pipes.size(); ++i) (i < 30 ? a : b).push_back(std::move(pipes[i].read));
  reaper.reap(std::move(a), {}, [&] {
    for (size_t i = 0; i < 30; ++i) a_closed_first = a_closed_first && pipes[i].read_end_closed();
    ++done_a;
  });
  reaper.reap(std::move(b), {}, [&] { ++done_b; });
  reaper.drain();
  EXPECT_EQ(reaper.pending(), 0u);
  EXPECT_EQ(done_a, 1);
  EXPECT_EQ(done_b, 1);
  EXPECT_TRUE(a_closed_first) << "done ran before its batch was closed";
  for (const auto& p : pipes) EXPECT_TRUE(p.read_end_closed());
}

TEST(LinkReaper, EmptyBatchRunsDoneAtOnceAndDestructionDrains) {
  int done = 0;
  std::vector<Pipe> pipes(3);
  {
    LinkReaper reaper;
    reaper.reap({}, {}, [&] { ++done; });
    EXPECT_EQ(done, 1);
    std::vector<Fd> fds;
    for (auto& p : pipes) fds.push_back(std::move(p.read));
    reaper.reap(std::move(fds), {}, [&] { ++done; });
  }
  EXPECT_EQ(done, 2);
  for (const auto& p : pipes) EXPECT_TRUE(p.read_end_closed());
}

}  // namespace
}  // namespace tailcause::probes
