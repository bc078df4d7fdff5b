// SPDX-License-Identifier: Apache-2.0
// The glitch propagation path of one request: its stages as a tree of threads and waits. A
// stage whose waits the kernel resolved through another thread (critical path: that thread held
// the lock, or answered on a local socket) gets that thread as its child, with how long the
// stage waited on it and where the time went; the waker's own span in the same request, when it
// has one, is followed in turn to a bounded depth. Helper spans that no stage waited on are shown
// as parallel work under the stage they ran in. Built when a glitched request ends; kept in the
// journal as JSON and printed by `tailcause glitches --show TRACE`. Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/detect/request_trace.h"
#include "core/record/schema.h"

namespace tailcause::core {

// How a node hangs off its parent.
enum class PropagationEdge : uint8_t {
  stage,        // one of the request's own stages (under the request)
  lock_holder,  // the parent's futex waits were woken by this thread: it held the lock
  peer_thread,  // the parent's socket waits were answered by this thread (a local peer)
  waker,        // the parent's other sleeps were woken by this thread
  parallel,     // a helper span of the request that ran during the parent; nobody waited on it
};
const char* propagation_edge_name(PropagationEdge e);
std::optional<PropagationEdge> propagation_edge_from_name(std::string_view name);

struct PropagationNode {
  PropagationEdge edge = PropagationEdge::stage;
  uint32_t tid = 0;
  // The span this thread ran in the request: its stage name ("worker" for a worker span
  // between stages). Absent: the thread ran no span of this request (another request's thread,
  // a process outside the SDK); `thread_name` may then say who it was.
  std::optional<std::string> stage;
  bool worker = false;  // the span is a helper thread's (context_attach..detach)
  std::string thread_name;
  uint64_t start_offset_ns = 0;  // since the request began (0 without a span)
  uint64_t wall_ns = 0;
  std::array<uint64_t, kComponents> component_ns{};
  std::string glitch;  // "over_p99 21.4 ms (2x P99 10.7 ms), cpu_throttled" when it glitched
  // The edge from the parent (lock_holder, peer_thread, waker): the parent's waits this thread
  // explained, and the component most of them went to.
  uint64_t wait_ns = 0;
  Component wait_component = Component::unattributed;
  std::vector<PropagationNode> children;

  bool operator==(const PropagationNode&) const = default;
};

struct PropagationTree {
  std::string trace_id, tenant, agent;
  uint64_t request_wall_ns = 0;
  std::string request_glitch;           // the request's own glitch, as for a node; empty when none
  std::vector<PropagationNode> stages;  // in start order

  bool operator==(const PropagationTree&) const = default;
  size_t node_count() const;
};

struct PropagationLimits {
  size_t max_depth = 4;  // waits followed through at most this many threads below a stage
  size_t max_nodes = 64;
};

// Names a thread that ran no span of the request ("hog" from its comm); may return "".
using ThreadNamer = std::function<std::string(uint32_t tid)>;

// How stage `index` of `t` hangs off the thread that woke it (lock_holder, peer_thread or
// waker); nullopt when its waits were resolved through no other thread.
std::optional<PropagationEdge> waker_edge(const RequestTrace& t, size_t index);
// The span of that thread in the same request that overlaps stage `index` most; nullopt when
// the thread ran none (it is outside the request).
std::optional<size_t> waker_span(const RequestTrace& t, size_t index);

PropagationTree build_propagation(const RequestTrace& t, const ThreadNamer& name_thread = {},
                                  PropagationLimits limits = {});

nlohmann::json propagation_json(const PropagationTree& tree);
// The inverse of propagation_json. Throws std::invalid_argument on a malformed document
// (it comes from a journal file, which anyone with access may have edited).
PropagationTree propagation_from_json(const nlohmann::json& doc);

// The tree as text, one line a node, for `tailcause glitches --show`.
std::string render_propagation(const PropagationTree& tree);

}  // namespace tailcause::core
