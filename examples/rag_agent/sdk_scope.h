// SPDX-License-Identifier: Apache-2.0
// Tiny RAII wrappers over the C probes of sdk/include/tailcause/sdk.h, so that every begin has
// its end even when a stage throws. The agent uses only the stable C header.
#pragma once

#include <tailcause/sdk.h>

#include <cstdint>

namespace rag {

inline const char* stage_name(tailcause_stage stage) {
  switch (stage) {
    case TAILCAUSE_STAGE_PROMPT: return "prompt";
    case TAILCAUSE_STAGE_EMBEDDING: return "embedding";
    case TAILCAUSE_STAGE_RETRIEVAL: return "retrieval";
    case TAILCAUSE_STAGE_GENERATION: return "generation";
    case TAILCAUSE_STAGE_TOOL: return "tool";
    case TAILCAUSE_STAGE_RESPONSE: return "response";
    case TAILCAUSE_STAGE_OTHER: return "other";
  }
  return "other";
}

// request_begin on construction, request_end with the recorded status on destruction.
class RequestProbe {
 public:
  RequestProbe(uint64_t id, const char* tenant, const char* agent, const char* trace_id) : id_(id) {
    tailcause_request_begin(id, tenant, agent, trace_id);
  }
  ~RequestProbe() { tailcause_request_end(id_, status_); }
  RequestProbe(const RequestProbe&) = delete;
  RequestProbe& operator=(const RequestProbe&) = delete;
  void set_status(int64_t status) { status_ = status; }

 private:
  uint64_t id_;
  int64_t status_ = 0;
};

class StageProbe {
 public:
  StageProbe(uint64_t request_id, tailcause_stage stage) : id_(request_id), stage_(stage) {
    tailcause_stage_begin(id_, stage_, stage_name(stage_));
  }
  ~StageProbe() { tailcause_stage_end(id_, stage_); }
  StageProbe(const StageProbe&) = delete;
  StageProbe& operator=(const StageProbe&) = delete;

 private:
  uint64_t id_;
  tailcause_stage stage_;
};

// Marks the current (helper) thread as working for a request for its lifetime.
class ContextProbe {
 public:
  explicit ContextProbe(uint64_t request_id) : id_(request_id) { tailcause_context_attach(id_); }
  ~ContextProbe() { tailcause_context_detach(id_); }
  ContextProbe(const ContextProbe&) = delete;
  ContextProbe& operator=(const ContextProbe&) = delete;

 private:
  uint64_t id_;
};

// Same layer markers as the SDK, scoped.
class LayerProbe {
 public:
  LayerProbe(uint64_t layer, uint64_t batch) : layer_(layer), batch_(batch) {
    tailcause_layer_begin(layer_, batch_);
  }
  ~LayerProbe() { tailcause_layer_end(layer_, batch_); }
  LayerProbe(const LayerProbe&) = delete;
  LayerProbe& operator=(const LayerProbe&) = delete;

 private:
  uint64_t layer_, batch_;
};

}  // namespace rag
