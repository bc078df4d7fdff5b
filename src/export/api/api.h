// SPDX-License-Identifier: Apache-2.0
// The JSON API under /api/v1/ that the web UI, `tailcause top` and `tailcause heatmap` read.
// A sampler thread scrapes the daemon's own metrics every tick into a MetricHistory (by default
// the last 15 minutes at 2 s, ui: in the configuration; hourly TCP totals); each endpoint
// answers from it, the stage heatmap from the pipeline's StageHeatmap, and the glitch list
// from the journal (a read-only use of a second SQLite connection). Read-only: nothing a
// request says changes what the daemon does.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/aggregate/metric_history.h"
#include "core/record/metrics.h"
#include "core/aggregate/stage_heatmap.h"
#include "export/api/params.h"

namespace tailcause::exporter {
class Journal;
}

namespace tailcause::exporter::api {

struct ApiSettings {
  std::string journal_path;            // "": no journal, the glitch list is empty and says so
  double cache_breakdown_ratio = 0.5;  // a cache at or over it is shown as breaking down
  uint64_t tick_ns = 2'000'000'000;
  size_t slots = 450;
};

// The metric families the history keeps (the endpoints read nothing else).
core::HistorySettings history_settings(uint64_t tick_ns, size_t slots);

class Api {
 public:
  using Collect = std::function<void(core::MetricSet&)>;
  explicit Api(Collect collect, ApiSettings settings = {});
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  void configure(ApiSettings settings);  // before start()
  // Where /heatmap/stage reads from (the pipeline's); without one it answers 503.
  void set_stage_heatmap(std::shared_ptr<const core::StageHeatmap> heatmap);
  // Samples every tick on a thread of its own until stop().
  void start();
  void stop();
  // One sample now (the thread's work; tests call it themselves).
  void sample(int64_t unix_ns);
  // A sample from a scrape the caller made (tests).
  void sample(const core::MetricSet& scrape, int64_t unix_ns);

  // `path` below /api/v1 ("/stages"), the raw query string. 404 for an unknown endpoint, 400
  // for bad parameters, 503 when the journal cannot be read. The answers built from the history
  // are kept until its next sample: many clients polling the same view cost one answer a tick.
  Reply handle(std::string_view path, std::string_view query, int64_t now_ns) const;

 private:
  Reply answer(std::string_view path, std::string_view query, int64_t now_ns) const;
  Reply glitches(const Params& p, int64_t now_ns) const;
  void open_journal();

  Collect collect_;
  ApiSettings settings_;
  mutable std::mutex mu_;  // guards history_, journal_, stage_heatmap_, answers_
  core::MetricHistory history_;
  // What the history answered since its last sample, by path and query (a bounded number).
  mutable std::map<std::string, Reply, std::less<>> answers_;
  std::shared_ptr<const core::StageHeatmap> stage_heatmap_;
  mutable std::unique_ptr<Journal> journal_;  // opened on the first glitch request
  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace tailcause::exporter::api
