// SPDX-License-Identifier: Apache-2.0
#include "export/http/work_lane.h"

#include <sys/resource.h>
#include <unistd.h>

namespace tailcause::exporter::http {

WorkLane::WorkLane(size_t max_jobs, int nice)
    : max_jobs_(max_jobs == 0 ? 1 : max_jobs), thread_([this, nice] { run(nice); }) {}

WorkLane::~WorkLane() { stop(); }

bool WorkLane::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || jobs_.size() + running_ >= max_jobs_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void WorkLane::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  jobs_.clear();
}

void WorkLane::run(int nice) {
  // Linux keeps a nice value per thread: this lowers this thread's priority only. Lowering
  // needs no privilege; a failure leaves it at the process's (harmless).
  if (nice > 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // what it captured is released before the next one is counted
    lock.lock();
    --running_;
  }
}

}  // namespace tailcause::exporter::http
