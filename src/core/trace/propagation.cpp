// SPDX-License-Identifier: Apache-2.0
#include "core/trace/propagation.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/detect/glitch_detector.h"
#include "core/detect/verdict.h"

namespace tailcause::core {
namespace {

constexpr std::array kEdgeNames = {"stage", "lock_holder", "peer_thread", "waker", "parallel"};
// A journal document deeper or larger than this is refused, not walked.
constexpr size_t kMaxJsonDepth = 32;
constexpr size_t kMaxJsonNodes = 4096;

std::string glitch_text(const Glitch& g) {
  return g.check.glitch() ? threshold_text(g.check) + ", " + g.cause : g.cause;
}

bool is_worker(const StageRecord& s) {
  return s.worker() || s.kind == StageRecord::kWorkerSpanKind;
}

uint64_t overlap_ns(const StageRecord& s, uint64_t from, uint64_t to) {
  const uint64_t a = std::max(s.start_ns, from), b = std::min(s.end_ns, to);
  return b > a ? b - a : 0;
}

class Builder {
 public:
  Builder(const RequestTrace& t, const ThreadNamer& namer, PropagationLimits limits)
      : t_(t), namer_(namer), limits_(limits), placed_(t.stages.size(), false) {}

  PropagationTree build() {
    PropagationTree tree;
    tree.trace_id = t_.trace_id;
    tree.tenant = t_.request.id.tenant;
    tree.agent = t_.request.id.agent;
    tree.request_wall_ns =
        t_.request.end_ns > t_.request.start_ns ? t_.request.end_ns - t_.request.start_ns : 0;
    for (const Glitch& g : t_.glitches) {
      if (g.stage == GlitchDetector::kRequestStage) tree.request_glitch = glitch_text(g);
    }
    std::vector<size_t> owners;  // indexes of the owner stages, in start order
    for (size_t i = 0; i < t_.stages.size() && room(); ++i) {
      if (is_worker(t_.stages[i])) continue;
      owners.push_back(i);
      tree.stages.push_back(span_node(i, PropagationEdge::stage));
      std::vector<size_t> path{i};
      follow(tree.stages.back(), i, path, 0);
    }
    // Helper spans nobody waited on: parallel work under the stage they overlap most.
    for (size_t j = 0; j < t_.stages.size() && room(); ++j) {
      if (!is_worker(t_.stages[j]) || placed_[j]) continue;
      const StageRecord& w = t_.stages[j];
      size_t best = owners.size();
      uint64_t best_overlap = 0;
      for (size_t k = 0; k < owners.size(); ++k) {
        const uint64_t o = overlap_ns(t_.stages[owners[k]], w.start_ns, w.end_ns);
        if (o > best_overlap) best = k, best_overlap = o;
      }
      placed_[j] = true;
      PropagationNode n = span_node(j, PropagationEdge::parallel);
      std::vector<size_t> path{j};
      follow(n, j, path, 0);
      (best < owners.size() ? tree.stages[best].children : tree.stages).push_back(std::move(n));
    }
    return tree;
  }

 private:
  bool room() const { return nodes_ < limits_.max_nodes; }

  PropagationNode span_node(size_t i, PropagationEdge edge) {
    const StageRecord& s = t_.stages[i];
    ++nodes_;
    PropagationNode n;
    n.edge = edge;
    n.tid = s.tid;
    n.stage = s.stage.empty() ? "worker" : s.stage;
    n.worker = is_worker(s);
    n.start_offset_ns = s.start_ns > t_.request.start_ns ? s.start_ns - t_.request.start_ns : 0;
    n.wall_ns = s.wall_ns();
    n.component_ns = s.component_ns;
    if (const Glitch* g = t_.stage_glitch(i)) n.glitch = glitch_text(*g);
    return n;
  }

  // Adds the thread whose wake-ups explained span `i`'s waits as a child of `n`, then that
  // thread's own waker, while the path stays acyclic and within the limits.
  void follow(PropagationNode& n, size_t i, std::vector<size_t>& path, size_t depth) {
    const StageRecord& s = t_.stages[i];
    if (!s.waker || depth >= limits_.max_depth || !room()) return;
    const Waker& w = *s.waker;
    const auto best = waker_span(t_, i);
    // Threads handing a lock back and forth: the waker is already on this path.
    if (best && std::find(path.begin(), path.end(), *best) != path.end()) return;
    const PropagationEdge edge = *waker_edge(t_, i);
    PropagationNode child;
    if (best) {
      child = span_node(*best, edge);
      placed_[*best] = true;
      path.push_back(*best);
      follow(child, *best, path, depth + 1);
      path.pop_back();
    } else {
      ++nodes_;
      child.edge = edge;
      child.tid = w.tid;
      if (namer_) child.thread_name = namer_(w.tid);
    }
    child.wait_ns = w.ns;
    child.wait_component = w.component;
    n.children.push_back(std::move(child));
  }

  const RequestTrace& t_;
  const ThreadNamer& namer_;
  PropagationLimits limits_;
  std::vector<bool> placed_;
  size_t nodes_ = 0;
};

// ---- JSON ----------------------------------------------------------------------------------

nlohmann::json node_json(const PropagationNode& n) {
  nlohmann::json j = {{"edge", propagation_edge_name(n.edge)}, {"tid", n.tid}};
  if (n.stage) {
    j["stage"] = *n.stage;
    j["worker"] = n.worker;
    j["start_offset_ns"] = n.start_offset_ns;
    j["wall_ns"] = n.wall_ns;
    nlohmann::json comps = nlohmann::json::object();
    for (Component c : kAllComponents) {
      if (const uint64_t ns = n.component_ns[index_of(c)]) comps[component_name(c)] = ns;
    }
    j["components_ns"] = std::move(comps);
  }
  if (!n.thread_name.empty()) j["thread_name"] = n.thread_name;
  if (!n.glitch.empty()) j["glitch"] = n.glitch;
  if (n.edge != PropagationEdge::stage && n.edge != PropagationEdge::parallel) {
    j["wait_ns"] = n.wait_ns;
    j["wait_component"] = component_name(n.wait_component);
  }
  nlohmann::json children = nlohmann::json::array();
  for (const auto& c : n.children) children.push_back(node_json(c));
  j["children"] = std::move(children);
  return j;
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument(fmt::format("propagation tree: {}: {}", where, what));
}

const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) bad(where, fmt::format("no \"{}\"", key));
  return *it;
}

uint64_t u64(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = member(j, key, where);
  // nlohmann keeps a literal 1 signed; any integer >= 0 is a count.
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    bad(where, fmt::format("\"{}\" is not a count", key));
  return v.get<uint64_t>();
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where,
                 bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) bad(where, fmt::format("no \"{}\"", key));
    return {};
  }
  if (!it->is_string()) bad(where, fmt::format("\"{}\" is not a string", key));
  return it->get<std::string>();
}

const nlohmann::json& array(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = member(j, key, where);
  if (!v.is_array()) bad(where, fmt::format("\"{}\" is not an array", key));
  return v;
}

PropagationNode node_from_json(const nlohmann::json& j, const std::string& where, size_t depth,
                               size_t& nodes) {
  if (depth > kMaxJsonDepth) bad(where, "nested too deep");
  if (++nodes > kMaxJsonNodes) bad(where, "too many nodes");
  if (!j.is_object()) bad(where, "not an object");
  PropagationNode n;
  const auto edge = propagation_edge_from_name(text(j, "edge", where, true));
  if (!edge) bad(where, "unknown edge");
  n.edge = *edge;
  const uint64_t tid = u64(j, "tid", where);
  if (tid > UINT32_MAX) bad(where, "tid out of range");
  n.tid = static_cast<uint32_t>(tid);
  if (j.contains("stage")) {
    n.stage = text(j, "stage", where, true);
    const auto& worker = member(j, "worker", where);
    if (!worker.is_boolean()) bad(where, "\"worker\" is not a boolean");
    n.worker = worker.get<bool>();
    n.start_offset_ns = u64(j, "start_offset_ns", where);
    n.wall_ns = u64(j, "wall_ns", where);
    const auto& comps = member(j, "components_ns", where);
    if (!comps.is_object()) bad(where, "\"components_ns\" is not an object");
    for (const auto& [name, value] : comps.items()) {
      const auto c = component_from_name(name);
      if (!c) bad(where, fmt::format("unknown component \"{}\"", name));
      n.component_ns[index_of(*c)] = u64(comps, name.c_str(), where);
    }
  }
  n.thread_name = text(j, "thread_name", where, false);
  n.glitch = text(j, "glitch", where, false);
  if (n.edge != PropagationEdge::stage && n.edge != PropagationEdge::parallel) {
    n.wait_ns = u64(j, "wait_ns", where);
    const auto c = component_from_name(text(j, "wait_component", where, true));
    if (!c) bad(where, "unknown wait_component");
    n.wait_component = *c;
  }
  const auto& children = array(j, "children", where);
  for (size_t i = 0; i < children.size(); ++i) {
    n.children.push_back(
        node_from_json(children[i], fmt::format("{}.children[{}]", where, i), depth + 1, nodes));
  }
  return n;
}

// ---- text ----------------------------------------------------------------------------------

// "cpu_throttled 88%, on_cpu 10%": the components of 5% or more of the wall time, largest first.
std::string components_text(const PropagationNode& n) {
  if (n.wall_ns == 0) return {};
  std::vector<std::pair<uint64_t, Component>> big;
  for (Component c : kAllComponents) {
    const uint64_t ns = n.component_ns[index_of(c)];
    if (ns * 20 >= n.wall_ns && ns > 0) big.emplace_back(ns, c);
  }
  std::sort(big.begin(), big.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t i = 0; i < big.size() && i < 3; ++i) {
    out += fmt::format("{}{} {:.0f}%", i ? ", " : "", component_name(big[i].second),
                       100.0 * static_cast<double>(big[i].first) / static_cast<double>(n.wall_ns));
  }
  return out;
}

std::string span_text(const PropagationNode& n) {
  if (!n.stage) {
    return fmt::format("tid {} ran no span of this request{}", n.tid,
                       n.thread_name.empty() ? "" : fmt::format(" ({})", n.thread_name));
  }
  std::string s =
      fmt::format("{}{}  tid {}  at +{}  {}", *n.stage, n.worker ? " (worker)" : "", n.tid,
                  format_duration(n.start_offset_ns), format_duration(n.wall_ns));
  if (auto c = components_text(n); !c.empty()) s += "  " + c;
  if (!n.glitch.empty()) s += "  GLITCH " + n.glitch;
  return s;
}

std::string node_text(const PropagationNode& n) {
  switch (n.edge) {
    case PropagationEdge::stage: return span_text(n);
    case PropagationEdge::parallel: return "parallel: " + span_text(n);
    case PropagationEdge::lock_holder:
    case PropagationEdge::peer_thread:
    case PropagationEdge::waker: {
      const char* who = n.edge == PropagationEdge::lock_holder   ? "the lock holder"
                        : n.edge == PropagationEdge::peer_thread ? "the peer thread"
                                                                 : "the thread that woke it";
      return fmt::format("waited {} on {}, which was in {}: {}", format_duration(n.wait_ns), who,
                         component_name(n.wait_component), span_text(n));
    }
  }
  return span_text(n);
}

void render_children(const std::vector<PropagationNode>& nodes, const std::string& indent,
                     std::string& out) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool last = i + 1 == nodes.size();
    out += indent + (last ? "└─ " : "├─ ") + node_text(nodes[i]) + "\n";
    render_children(nodes[i].children, indent + (last ? "   " : "│  "), out);
  }
}

size_t count_nodes(const std::vector<PropagationNode>& nodes) {
  size_t n = nodes.size();
  for (const auto& c : nodes) n += count_nodes(c.children);
  return n;
}

}  // namespace

const char* propagation_edge_name(PropagationEdge e) { return kEdgeNames[static_cast<size_t>(e)]; }

std::optional<PropagationEdge> propagation_edge_from_name(std::string_view name) {
  for (size_t i = 0; i < kEdgeNames.size(); ++i)
    if (name == kEdgeNames[i]) return static_cast<PropagationEdge>(i);
  return std::nullopt;
}

std::optional<PropagationEdge> waker_edge(const RequestTrace& t, size_t index) {
  if (index >= t.stages.size() || !t.stages[index].waker) return std::nullopt;
  const Waker& w = *t.stages[index].waker;
  return w.lock_holder ? PropagationEdge::lock_holder
         : w.peer      ? PropagationEdge::peer_thread
                       : PropagationEdge::waker;
}

std::optional<size_t> waker_span(const RequestTrace& t, size_t index) {
  if (index >= t.stages.size() || !t.stages[index].waker) return std::nullopt;
  const StageRecord& s = t.stages[index];
  std::optional<size_t> best;
  uint64_t best_overlap = 0;
  for (size_t j = 0; j < t.stages.size(); ++j) {
    if (j == index || t.stages[j].tid != s.waker->tid) continue;
    const uint64_t o = overlap_ns(t.stages[j], s.start_ns, s.end_ns);
    if (o > best_overlap) best = j, best_overlap = o;
  }
  return best;
}

size_t PropagationTree::node_count() const { return count_nodes(stages); }

PropagationTree build_propagation(const RequestTrace& t, const ThreadNamer& name_thread,
                                  PropagationLimits limits) {
  return Builder(t, name_thread, limits).build();
}

nlohmann::json propagation_json(const PropagationTree& tree) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& n : tree.stages) stages.push_back(node_json(n));
  nlohmann::json j = {{"trace_id", tree.trace_id},
                      {"tenant", tree.tenant},
                      {"agent", tree.agent},
                      {"request_wall_ns", tree.request_wall_ns},
                      {"stages", std::move(stages)}};
  if (!tree.request_glitch.empty()) j["request_glitch"] = tree.request_glitch;
  return j;
}

PropagationTree propagation_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) bad("document", "not an object");
  PropagationTree tree;
  tree.trace_id = text(doc, "trace_id", "document", true);
  tree.tenant = text(doc, "tenant", "document", true);
  tree.agent = text(doc, "agent", "document", true);
  tree.request_wall_ns = u64(doc, "request_wall_ns", "document");
  tree.request_glitch = text(doc, "request_glitch", "document", false);
  const auto& stages = array(doc, "stages", "document");
  size_t nodes = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    tree.stages.push_back(node_from_json(stages[i], fmt::format("stages[{}]", i), 0, nodes));
  }
  return tree;
}

std::string render_propagation(const PropagationTree& tree) {
  std::string out = fmt::format("request {}  tenant {}  agent {}  trace {}",
                                format_duration(tree.request_wall_ns), tree.tenant, tree.agent,
                                tree.trace_id.empty() ? "-" : tree.trace_id);
  if (!tree.request_glitch.empty()) out += "  GLITCH " + tree.request_glitch;
  out += "\n";
  render_children(tree.stages, "", out);
  return out;
}

}  // namespace tailcause::core
