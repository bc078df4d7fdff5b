// SPDX-License-Identifier: Apache-2.0
#include "export/http/scrape_lane.h"

#include <map>

namespace tailcause::exporter::http {

ScrapeLane::ScrapeLane(Collect collect)
    : collect_(std::move(collect)), thread_([this] { run(); }) {}

ScrapeLane::~ScrapeLane() { stop(); }

void ScrapeLane::submit(Format format, Done done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    waiting_.push_back({format, std::move(done)});
  }
  wake_.notify_one();
}

void ScrapeLane::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    waiting_.clear();
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ScrapeLane::run() {
  for (;;) {
    std::vector<Waiter> batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      batch.swap(waiting_);
    }
    core::MetricSet set;
    collect_(set);
    std::map<Format, std::string> bodies;  // each format rendered once for the whole batch
    for (Waiter& w : batch) {
      auto it = bodies.find(w.format);
      if (it == bodies.end()) it = bodies.emplace(w.format, render(set, w.format)).first;
      w.done(it->second);
    }
  }
}

}  // namespace tailcause::exporter::http
