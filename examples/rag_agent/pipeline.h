// SPDX-License-Identifier: Apache-2.0
// One tenant's RAG pipeline: the six stages of a request, each marked with the SDK probes and
// timed by the agent itself. Shared by the tenant's worker threads; per-thread state (the tool
// connection, the helper thread) lives in WorkerState.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tailcause/cache/feedback.h>

#include "helper_thread.h"
#include "latency_stats.h"
#include "model.h"
#include "query_source.h"
#include "retrieval_cache.h"
#include "tool_server.h"
#include "vector_index.h"

namespace rag {

struct PipelineConfig {
  std::string tenant;
  std::string index_path;
  int tool_port = 0;
  bool cold_cache = false;  // start with a cold retrieval cache; drop the index from the page
                            // cache before every retrieval
  bool slow_peer = false;   // ask the tool server for a 300 ms delay
  bool entropy = false;     // every answer sampled cold, then hot (see generate)
  bool cache_bust = false;  // every question carries the user's history: no lookup matches
  bool cache_loop = false;  // the retrieval cache follows the daemon's verdicts (CacheFeedback)
  std::size_t cache_entries = kRetrievalCacheEntries;  // 0: no retrieval cache
  std::size_t output_tokens = 96;
  std::size_t nprobe = 6;  // IVF lists scanned per query
  std::size_t top_k = 8;
};

struct WorkerState {
  explicit WorkerState(int tool_port) : tool(tool_port) {}
  ToolClient tool;
  HelperThread helper;
};

struct PipelineCounters {
  std::atomic<uint64_t> completed{0}, failed{0}, tokens{0};
  std::atomic<uint64_t> cache_hit{0}, cache_miss{0}, cache_stale{0};
};

class RagPipeline {
 public:
  explicit RagPipeline(PipelineConfig config);

  // Serves one request end to end: request_begin ... request_end. Returns false on an error
  // (counted in the failing stage and in counters().failed); never throws.
  bool serve(WorkerState& worker, uint64_t request_id, const std::string& trace_id,
             uint32_t question);

  std::size_t questions() const { return questions_.size(); }
  const PipelineConfig& config() const { return config_; }
  StageStats& stats() { return stats_; }
  const PipelineCounters& counters() const { return counters_; }
  KvCache& kv_cache() { return kv_; }
  uint64_t index_bytes_read() const { return index_.bytes_read(); }
  // Stops the closed loop's thread (before its figures are read, so none moves after).
  void stop_cache_loop() {
    if (loop_) loop_->stop();
  }
  // What the closed loop did, and the cache's own view of the tenant; nullopt without the loop.
  std::optional<tailcause::cache::FeedbackStats> loop_stats() const;
  tailcause::cache::TenantStats cache_stats() {
    return cache_ ? cache_->library().stats(config_.tenant) : tailcause::cache::TenantStats{};
  }

 private:
  std::vector<Neighbour> retrieve(WorkerState& worker, uint64_t request_id,
                                  std::span<const float> query, uint64_t key);
  void preload_cache();
  std::string respond(const Generation& gen, const std::vector<Neighbour>& docs,
                      const std::string& tool_answer) const;

  PipelineConfig config_;
  VectorIndex index_;
  QueryEncoder encoder_;                 // after index_: its projection is to the index's dimension
  std::optional<RetrievalCache> cache_;  // none with cache_entries 0
  // After cache_ and index_: stopped (its thread joined) before they go.
  std::unique_ptr<tailcause::cache::CacheFeedback> loop_;
  KvCache kv_;
  std::vector<std::string> questions_;
  StageStats stats_;
  PipelineCounters counters_;
};

}  // namespace rag
