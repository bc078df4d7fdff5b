// SPDX-License-Identifier: Apache-2.0
// /metrics, answered off the I/O thread and one collection at a time: the scrapes that arrive
// while one is collected and rendered share the next, so any number of scrapers at once costs
// at most two renders of latency, and the API's work never sits in front of a scrape.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/record/metrics.h"
#include "export/exposition.h"

namespace tailcause::exporter::http {

class ScrapeLane {
 public:
  using Collect = std::function<void(core::MetricSet&)>;
  using Done = std::function<void(std::string body)>;
  explicit ScrapeLane(Collect collect);
  ~ScrapeLane();
  ScrapeLane(const ScrapeLane&) = delete;
  ScrapeLane& operator=(const ScrapeLane&) = delete;

  // `done` runs on the lane's thread with the rendered body.
  void submit(Format format, Done done);
  // Ends the thread; scrapes still waiting are dropped (their `done` never runs).
  void stop();

 private:
  struct Waiter {
    Format format;
    Done done;
  };
  void run();

  Collect collect_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Waiter> waiting_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tailcause::exporter::http
