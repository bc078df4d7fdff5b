// SPDX-License-Identifier: Apache-2.0
// A bounded queue of jobs run on one thread of lower CPU priority: the JSON API's answers,
// built from the history (long windows, many series) for people and dashboards, which must
// neither delay a scrape nor pile up without end. Past `max_jobs` waiting or running, submit()
// refuses and the endpoint answers 503 with Retry-After.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tailcause::exporter::http {

class WorkLane {
 public:
  // `nice`: added to the thread's nice value (0..19); a higher one yields the CPU to the
  // daemon's other threads when the cores are busy.
  WorkLane(size_t max_jobs, int nice);
  ~WorkLane();
  WorkLane(const WorkLane&) = delete;
  WorkLane& operator=(const WorkLane&) = delete;

  // False when `max_jobs` are already waiting or running: the job is not taken.
  bool submit(std::function<void()> job);
  // Ends the thread after the running job; jobs not started are dropped.
  void stop();

 private:
  void run(int nice);

  size_t max_jobs_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tailcause::exporter::http
