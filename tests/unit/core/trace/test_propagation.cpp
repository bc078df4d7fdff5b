// SPDX-License-Identifier: Apache-2.0
// The glitch propagation tree of one request: stages, the threads their waits were resolved
// through (followed transitively, bounded, acyclic), parallel helper spans, its JSON round trip
// and hostile journal documents, and the text `glitches --show` prints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bpf/attrib.h"
#include "core/detect/glitch_detector.h"
#include "core/trace/propagation.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

testing::StageBuilder span_of(const char* stage, uint32_t tid, uint64_t start, uint64_t end) {
  return testing::StageBuilder()
      .tenant("ta")
      .agent("rag")
      .stage(stage)
      .kind(StageKind::retrieval)
      .tid(tid)
      .start_ms(start)
      .end_ms(end);
}

StageRecord span(const char* stage, uint32_t tid, uint64_t start, uint64_t end) {
  return span_of(stage, tid, start, end).build();
}

StageRecord worker(const char* stage, uint32_t tid, uint64_t start, uint64_t end) {
  return span_of(stage, tid, start, end).flags(ATTRIB_SPAN_WORKER).build();
}

void waits_on(StageRecord& s, uint32_t tid, uint64_t wait_ms, Component c, bool lock = true) {
  s.waker = Waker{tid, wait_ms * ms, c, lock, false};
}

RequestTrace trace_of(std::vector<StageRecord> stages) {
  RequestTrace t;
  t.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  t.request.id.tenant = "ta";
  t.request.id.agent = "rag";
  t.request.start_ns = 1000 * ms;
  t.request.end_ns = 1300 * ms;
  t.stages = std::move(stages);
  return t;
}

TEST(Propagation, StageWaitingOnAThrottledHelperHasTheHelperAsItsChild) {
  auto retrieval = span("retrieval", 10, 1010, 1110);
  retrieval.component_ns[index_of(Component::cpu_throttled)] = 71 * ms;
  retrieval.component_ns[index_of(Component::on_cpu)] = 29 * ms;
  waits_on(retrieval, 11, 71, Component::cpu_throttled);
  auto helper = worker("retrieval", 11, 1012, 1108);
  helper.component_ns[index_of(Component::cpu_throttled)] = 80 * ms;
  auto generation = span("generation", 10, 1110, 1290);
  const PropagationTree tree = build_propagation(trace_of({retrieval, helper, generation}));

  ASSERT_EQ(tree.stages.size(), 2u);  // the worker span is not a stage of its own
  EXPECT_EQ(tree.request_wall_ns, 300 * ms);
  const PropagationNode& r = tree.stages[0];
  EXPECT_EQ(r.stage, "retrieval");
  EXPECT_EQ(r.start_offset_ns, 10 * ms);
  ASSERT_EQ(r.children.size(), 1u);
  const PropagationNode& h = r.children[0];
  EXPECT_EQ(h.edge, PropagationEdge::lock_holder);
  EXPECT_EQ(h.tid, 11u);
  EXPECT_TRUE(h.worker);
  EXPECT_EQ(h.wait_ns, 71 * ms);
  EXPECT_EQ(h.wait_component, Component::cpu_throttled);
  EXPECT_EQ(h.wall_ns, 96 * ms);
  EXPECT_TRUE(tree.stages[1].children.empty());
  EXPECT_EQ(tree.node_count(), 3u);
}

TEST(Propagation, TwoLevelsAWaitsOnBWhoWaitsOnCInBlockIo) {
  auto a = span("retrieval", 10, 1000, 1100);
  waits_on(a, 11, 90, Component::block_io);
  auto b = worker("retrieval", 11, 1001, 1099);
  waits_on(b, 12, 85, Component::block_io, /*lock=*/false);
  auto c = worker("retrieval", 12, 1002, 1098);
  c.component_ns[index_of(Component::block_io)] = 90 * ms;
  const PropagationTree tree = build_propagation(trace_of({a, b, c}));

  ASSERT_EQ(tree.stages.size(), 1u);
  const auto& level1 = tree.stages[0].children;
  ASSERT_EQ(level1.size(), 1u);
  EXPECT_EQ(level1[0].tid, 11u);
  const auto& level2 = level1[0].children;
  ASSERT_EQ(level2.size(), 1u);
  EXPECT_EQ(level2[0].tid, 12u);
  EXPECT_EQ(level2[0].edge, PropagationEdge::waker);
  EXPECT_EQ(level2[0].wait_component, Component::block_io);
  // C's span was placed as a waker: it is not listed again as parallel work.
  EXPECT_EQ(tree.node_count(), 3u);
}

TEST(Propagation, AThreadOutsideTheRequestIsALeafNamedByTheNamer) {
  auto a = span("generation", 10, 1000, 1200);
  waits_on(a, 999, 150, Component::cpu_throttled);
  int asked = 0;
  const PropagationTree tree = build_propagation(trace_of({a}), [&](uint32_t tid) {
    ++asked;
    return tid == 999 ? std::string("hog") : std::string();
  });
  ASSERT_EQ(tree.stages[0].children.size(), 1u);
  const PropagationNode& leaf = tree.stages[0].children[0];
  EXPECT_FALSE(leaf.stage.has_value());
  EXPECT_EQ(leaf.thread_name, "hog");
  EXPECT_EQ(leaf.wait_ns, 150 * ms);
  EXPECT_EQ(asked, 1);
  EXPECT_NE(render_propagation(tree).find("tid 999 ran no span of this request (hog)"),
            std::string::npos);
}

TEST(Propagation, CyclesStopAndDepthIsBounded) {
  // A waits on B and B on A (two threads handing a lock back and forth): one level each way.
  auto a = worker("retrieval", 10, 1000, 1100);
  waits_on(a, 11, 50, Component::lock);
  auto b = worker("retrieval", 11, 1000, 1100);
  waits_on(b, 10, 50, Component::lock);
  auto owner = span("retrieval", 9, 1000, 1100);
  waits_on(owner, 10, 60, Component::lock);
  const PropagationTree tree = build_propagation(trace_of({owner, a, b}));
  // owner -> a -> b, and b's waker (a) is already on the path: stop.
  ASSERT_EQ(tree.stages.size(), 1u);
  EXPECT_EQ(tree.node_count(), 3u);

  // A chain of 10 threads, each waiting on the next: followed max_depth levels only.
  std::vector<StageRecord> chain{span("tool", 100, 1000, 1200)};
  waits_on(chain[0], 101, 100, Component::network);
  for (uint32_t tid = 101; tid < 110; ++tid) {
    chain.push_back(worker("tool", tid, 1000, 1200));
    waits_on(chain.back(), tid + 1, 100, Component::network);
  }
  PropagationLimits limits;
  limits.max_depth = 3;
  const PropagationTree bounded = build_propagation(trace_of(chain), {}, limits);
  const PropagationNode* n = &bounded.stages[0];
  size_t depth = 0;
  while (!n->children.empty() && n->children[0].edge != PropagationEdge::parallel) {
    n = &n->children[0];
    ++depth;
  }
  EXPECT_EQ(depth, 3u);
}

TEST(Propagation, HelperSpansNobodyWaitedOnAreParallelUnderTheirStage) {
  auto emb = span("embedding", 10, 1000, 1050);
  auto retrieval = span("retrieval", 10, 1050, 1150);
  auto helper = worker("retrieval", 11, 1060, 1140);
  auto late = worker("retrieval", 12, 1250, 1260);  // after every stage: at the top
  const PropagationTree tree = build_propagation(trace_of({emb, retrieval, helper, late}));
  ASSERT_EQ(tree.stages.size(), 3u);
  ASSERT_EQ(tree.stages[1].children.size(), 1u);
  EXPECT_EQ(tree.stages[1].children[0].edge, PropagationEdge::parallel);
  EXPECT_EQ(tree.stages[1].children[0].tid, 11u);
  EXPECT_EQ(tree.stages[2].edge, PropagationEdge::parallel);
  EXPECT_EQ(tree.stages[2].tid, 12u);
}

TEST(Propagation, GlitchesAreMarkedOnTheirStageAndTheRequest) {
  auto retrieval = span("retrieval", 10, 1010, 1110);
  RequestTrace t = trace_of({retrieval});
  Glitch g;
  g.stage = "retrieval";
  g.start_ns = retrieval.start_ns;
  g.check.wall_ns = retrieval.wall_ns();
  g.check.reason = GlitchReason::over_slo;
  g.check.slo_ns = 50 * ms;
  g.cause = "cpu_throttled";
  Glitch req;
  req.stage = GlitchDetector::kRequestStage;
  req.check.wall_ns = 300 * ms;
  req.check.reason = GlitchReason::over_slo;
  req.check.slo_ns = 200 * ms;
  req.cause = "cpu_throttled";
  t.glitches = {g, req};
  const PropagationTree tree = build_propagation(t);
  EXPECT_EQ(tree.stages[0].glitch, "over_slo 50 ms, cpu_throttled");
  EXPECT_EQ(tree.request_glitch, "over_slo 200 ms, cpu_throttled");
}

TEST(Propagation, NodeLimitCapsTheTree) {
  std::vector<StageRecord> stages;
  for (uint32_t i = 0; i < 100; ++i) stages.push_back(span("tool", 10, 1000 + i, 1001 + i));
  PropagationLimits limits;
  limits.max_nodes = 16;
  EXPECT_EQ(build_propagation(trace_of(stages), {}, limits).node_count(), 16u);
}

PropagationTree sample() {
  auto retrieval = span("retrieval", 10, 1010, 1110);
  retrieval.component_ns[index_of(Component::lock)] = 10 * ms;
  retrieval.component_ns[index_of(Component::cpu_throttled)] = 90 * ms;
  waits_on(retrieval, 11, 88, Component::cpu_throttled);
  auto helper = worker("retrieval", 11, 1012, 1108);
  helper.component_ns[index_of(Component::cpu_throttled)] = 80 * ms;
  waits_on(helper, 77, 5, Component::on_cpu, false);
  PropagationTree tree = build_propagation(trace_of({retrieval, helper}),
                                           [](uint32_t) { return std::string("writer"); });
  tree.request_glitch = "over_slo 200 ms, cpu_throttled";
  return tree;
}

TEST(Propagation, JsonRoundTrip) {
  const PropagationTree tree = sample();
  const auto doc = propagation_json(tree);
  EXPECT_EQ(propagation_from_json(nlohmann::json::parse(doc.dump())), tree);
  EXPECT_EQ(doc["stages"][0]["children"][0]["edge"], "lock_holder");
  EXPECT_EQ(doc["stages"][0]["components_ns"]["cpu_throttled"], 90 * ms);
}

TEST(Propagation, MalformedJournalDocumentsAreRefusedWithWhere) {
  auto refused = [](const nlohmann::json& doc, const std::string& what) {
    try {
      propagation_from_json(doc);
      ADD_FAILURE() << "accepted " << doc.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const auto good = propagation_json(sample());
  refused(nlohmann::json::array(), "not an object");
  auto j = good;
  j.erase("stages");
  refused(j, "no \"stages\"");
  j = good;
  j["stages"][0]["children"][0]["edge"] = "boss";
  refused(j, "stages[0].children[0]: unknown edge");
  j = good;
  j["stages"][0]["components_ns"]["magic"] = 1;
  refused(j, "unknown component \"magic\"");
  j = good;
  j["stages"][0]["tid"] = -1;
  refused(j, "\"tid\" is not a count");
  j = good;
  j["stages"][0]["tid"] = uint64_t{1} << 40;
  refused(j, "tid out of range");
  j = good;
  j["stages"][0]["children"][0]["wait_component"] = 7;
  refused(j, "\"wait_component\" is not a string");
  // Nested 100 deep (a stack-overflow attempt): refused by depth, not walked.
  nlohmann::json deep = {{"edge", "waker"},
                         {"tid", 1},
                         {"wait_ns", 1},
                         {"wait_component", "lock"},
                         {"children", nlohmann::json::array()}};
  for (int i = 0; i < 100; ++i) {
    nlohmann::json up = deep;
    up["children"] = nlohmann::json::array({std::move(deep)});
    deep = std::move(up);
  }
  j = good;
  j["stages"][0]["children"] = nlohmann::json::array({deep});
  refused(j, "nested too deep");
}

TEST(Propagation, RenderedTreeSaysWhoWaitedOnWhomAndWhy) {
  const std::string text = render_propagation(sample());
  EXPECT_EQ(text,
            "request 300 ms  tenant ta  agent rag  trace 4bf92f3577b34da6a3ce929d0e0e4736  "
            "GLITCH over_slo 200 ms, cpu_throttled\n"
            "└─ retrieval  tid 10  at +10 ms  100 ms  cpu_throttled 90%, lock 10%\n"
            "   └─ waited 88 ms on the lock holder, which was in cpu_throttled: retrieval "
            "(worker)  tid 11  at +12 ms  96 ms  cpu_throttled 83%\n"
            "      └─ waited 5 ms on the thread that woke it, which was in on_cpu: tid 77 ran "
            "no span of this request (writer)\n")
      << text;
}

}  // namespace
}  // namespace tailcause::core
