// SPDX-License-Identifier: Apache-2.0
// Closes uprobe links away from the thread that serves scrapes. Closing a uprobe link waits in
// the kernel (an RCU grace period for a uprobe_multi link; tens of milliseconds under a global
// mutex for a perf-event uprobe), which must stall neither the endpoint (the probe set's lock)
// nor shutdown. Links handed over are closed on a few worker threads at once, so waits for
// grace periods overlap; each batch's `done` runs once all of its links are closed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "probes/handles.h"

namespace tailcause::probes {

class LinkReaper {
 public:
  explicit LinkReaper(size_t threads = 16) : max_threads_(threads) {}
  ~LinkReaper();
  LinkReaper(const LinkReaper&) = delete;
  LinkReaper& operator=(const LinkReaper&) = delete;

  // Takes the links; returns at once. `done` runs on a worker after the last one is closed.
  void reap(std::vector<Fd> fds, std::vector<LinkHandle> links, std::function<void()> done = {});
  // Waits until everything handed over so far is closed and its `done` has run.
  void drain();
  size_t pending() const;

 private:
  struct Batch {
    size_t left = 0;
    std::function<void()> done;
  };
  struct Item {
    std::variant<Fd, LinkHandle> link;
    std::shared_ptr<Batch> batch;
  };
  void work();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Item> queue_;
  size_t busy_ = 0;     // items taken by a worker, not yet finished
  size_t waiting_ = 0;  // workers waiting for work
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tailcause::probes
