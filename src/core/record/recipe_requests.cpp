// SPDX-License-Identifier: Apache-2.0
#include "core/record/recipe_requests.h"

#include <algorithm>
#include <utility>

namespace tailcause::core {

namespace {

// A call's place in an agent's pipeline: the fixed stage kinds are numbered in pipeline order
// (stage_kind.h); a free-named stage has none and never begins a request by itself.
int pipeline_rank(const StageRecord& span) {
  return span.kind < stage_kind_value(StageKind::response) + 1 ? static_cast<int>(span.kind) : -1;
}

}  // namespace

bool RecipeRequests::begins_new(const Open& o, const StageRecord& span) const {
  if (span.start_ns > o.end_ns + settings_.idle_gap_ns) return true;
  if (span.end_ns > o.start_ns + settings_.max_request_ns) return true;
  const int rank = pipeline_rank(span);
  return rank >= 0 && rank < o.latest_rank;
}

RecipeRequests::Open RecipeRequests::open_for(const StageRecord& span) {
  Open o;
  o.request_id = kRequestIdBit | next_id_++;
  o.id = span.id;
  o.id.request_id = o.request_id;
  o.id.synthetic = false;
  o.start_ns = span.start_ns;
  o.end_ns = span.end_ns;
  return o;
}

void RecipeRequests::merge(Open& o, const StageRecord& span) {
  o.start_ns = std::min(o.start_ns, span.start_ns);
  o.end_ns = std::max(o.end_ns, span.end_ns);
  if (const int rank = pipeline_rank(span); rank >= 0) o.latest_rank = rank;
  o.in_calls_ns += span.wall_ns();
  for (size_t c = 0; c < kComponents; ++c) o.call_component_ns[c] += span.component_ns[c];
  auto it = std::find_if(o.stages.begin(), o.stages.end(),
                         [&](const StageRecord& s) { return s.stage == span.stage; });
  if (it == o.stages.end()) {
    o.stages.push_back(span);
    o.stages.back().id = o.id;
    return;
  }
  StageRecord& s = *it;
  // The stage's time is the time inside its calls: its wall grows by each call's wall.
  s.end_ns += span.wall_ns();
  for (size_t c = 0; c < kComponents; ++c) s.component_ns[c] += span.component_ns[c];
  s.page_cache_misses += span.page_cache_misses;
  s.major_faults += span.major_faults;
  s.throttled_waits += span.throttled_waits;
  s.bytes_read += span.bytes_read;
  s.flags |= span.flags;
  s.invalid_name = s.invalid_name || span.invalid_name;
  if (s.detail.empty()) s.detail = span.detail;
  if (span.network_peer && span.network_peer_ns > s.network_peer_ns) {
    s.network_peer = span.network_peer;
    s.network_peer_ns = span.network_peer_ns;
  }
  if (span.waker && (!s.waker || span.waker->ns > s.waker->ns)) s.waker = span.waker;
}

void RecipeRequests::emit(Open&& o, std::vector<Record>& out) {
  RequestRecord r;
  r.cgroup_id = o.stages.empty() ? 0 : o.stages.front().cgroup_id;
  for (auto& s : o.stages) out.emplace_back(std::move(s));
  r.id = std::move(o.id);
  r.start_ns = o.start_ns;
  r.end_ns = o.end_ns;
  r.recipe = true;
  r.call_component_ns = o.call_component_ns;
  r.in_calls_ns = o.in_calls_ns;
  out.emplace_back(std::move(r));
}

void RecipeRequests::add(const StageRecord& span, std::vector<Record>& out) {
  const uint32_t pid = span.id.pid;
  auto it = open_.find(pid);
  if (span.recipe_call_request() ||
      (it == open_.end() && open_.size() >= settings_.max_processes)) {
    Open alone = open_for(span);
    merge(alone, span);
    emit(std::move(alone), out);
    return;
  }
  if (it != open_.end() && begins_new(it->second, span)) {
    emit(std::move(it->second), out);
    open_.erase(it);
    it = open_.end();
  }
  if (it == open_.end()) it = open_.emplace(pid, open_for(span)).first;
  merge(it->second, span);
}

void RecipeRequests::flush(uint64_t now_ns, std::vector<Record>& out) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.end_ns + settings_.idle_gap_ns < now_ns) {
      emit(std::move(it->second), out);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void RecipeRequests::end_process(uint32_t pid, std::vector<Record>& out) {
  auto it = open_.find(pid);
  if (it == open_.end()) return;
  emit(std::move(it->second), out);
  open_.erase(it);
}

}  // namespace tailcause::core
