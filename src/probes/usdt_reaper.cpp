// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_reaper.h"

#include <utility>

namespace tailcause::probes {

LinkReaper::~LinkReaper() {
  drain();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void LinkReaper::reap(std::vector<Fd> fds, std::vector<LinkHandle> links,
                      std::function<void()> done) {
  auto batch = std::make_shared<Batch>();
  batch->left = fds.size() + links.size();
  batch->done = std::move(done);
  if (batch->left == 0) {
    if (batch->done) batch->done();
    return;
  }
  std::lock_guard lock(mu_);
  for (auto& fd : fds) queue_.push_back(Item{std::move(fd), batch});
  for (auto& l : links) queue_.push_back(Item{std::move(l), batch});
  // A worker per queued link, up to the limit: each mostly sleeps in the kernel.
  while (threads_.size() < max_threads_ && waiting_ < queue_.size()) {
    threads_.emplace_back([this] { work(); });
    ++waiting_;  // counted as waiting until it takes an item
  }
  wake_.notify_all();
}

void LinkReaper::work() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    Item item = std::move(queue_.front());
    queue_.pop_front();
    --waiting_;
    ++busy_;
    lock.unlock();
    item.link = Fd();  // closes it, outside the lock
    std::function<void()> done;
    {
      std::lock_guard batch_lock(mu_);
      if (--item.batch->left == 0) done = std::move(item.batch->done);
    }
    if (done) done();
    item.batch.reset();
    lock.lock();
    --busy_;
    ++waiting_;
    if (queue_.empty() && busy_ == 0) idle_.notify_all();
  }
}

void LinkReaper::drain() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && busy_ == 0; });
}

size_t LinkReaper::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + busy_;
}

}  // namespace tailcause::probes
