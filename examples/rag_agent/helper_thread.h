// SPDX-License-Identifier: Apache-2.0
// One long-lived helper thread per worker: retrieval hands half of its scan to it, the way a
// real agent hands work to a pool. The job itself marks the thread with context_attach/detach.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace rag {

class HelperThread {
 public:
  HelperThread() : thread_([this] { loop(); }) {}
  ~HelperThread() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Runs `job` on the helper; the future rethrows what the job threw.
  std::future<void> run(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    auto done = task.get_future();
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(task));
    }
    cv_.notify_one();
    return done;
  }

 private:
  void loop() {
    while (true) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        task = std::move(jobs_.front());
        jobs_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace rag
