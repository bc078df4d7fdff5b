// SPDX-License-Identifier: Apache-2.0
// Requests for runtimes without the SDK: the spans of a process's uprobe recipes grouped into
// the requests its users would count, so that verdicts, incidents and `diagnose` speak of a
// generation, not of each token's llama_decode. The rules (docs/recipes.md, "Requests without
// the SDK"), per process:
//  - a request holds one stage per stage name: its calls' components and times summed, so the
//    stage's wall time is the time spent inside the runtime's calls;
//  - a call of a stage kind earlier in an agent's pipeline (prompt, embedding, retrieval,
//    generation, tool, response) than the request's latest call begins a new request
//    (llama.cpp: the next prompt's llama_tokenize after the last token's llama_decode);
//  - a process with no call for `idle_gap` ends its request, and so does `max_request`;
//  - a `request: call` recipe's call is a request of its own (ONNX Runtime's session Run).
// The request runs from its first call's start to its last call's end. Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/record/stage_record.h"

namespace tailcause::core {

class RecipeRequests {
 public:
  struct Settings {
    uint64_t idle_gap_ns = 1'000'000'000;
    uint64_t max_request_ns = 30'000'000'000;
    size_t max_processes = 4096;  // beyond: a new process's calls are requests of their own
  };
  // Request ids of grouped requests have this bit set, apart from any id an SDK agent gives.
  static constexpr uint64_t kRequestIdBit = uint64_t{1} << 63;

  RecipeRequests() = default;
  explicit RecipeRequests(Settings settings) : settings_(settings) {}

  // A recipe span with no SDK request (Identity::synthetic), its tenant and agent already
  // named. Appends to `out` the records of a request it ended: its stages, then the request.
  void add(const StageRecord& span, std::vector<Record>& out);
  // Ends the requests of processes with no call since now_ns - idle_gap.
  void flush(uint64_t now_ns, std::vector<Record>& out);
  // Ends the request of a process that exited.
  void end_process(uint32_t pid, std::vector<Record>& out);
  size_t open_requests() const { return open_.size(); }

 private:
  struct Open {
    uint64_t request_id = 0;
    Identity id;
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    int latest_rank = -1;  // pipeline place of the latest call's kind; -1: none
    std::array<uint64_t, kComponents> call_component_ns{};
    uint64_t in_calls_ns = 0;
    std::vector<StageRecord> stages;  // one per stage name, in order of first call
  };

  bool begins_new(const Open& o, const StageRecord& span) const;
  Open open_for(const StageRecord& span);
  static void merge(Open& o, const StageRecord& span);
  static void emit(Open&& o, std::vector<Record>& out);

  Settings settings_;
  std::unordered_map<uint32_t, Open> open_;
  uint64_t next_id_ = 1;
};

}  // namespace tailcause::core
