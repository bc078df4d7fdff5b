// SPDX-License-Identifier: Apache-2.0
// Recipe spans grouped into requests: llama.cpp's tokenize-then-decode calls, a pipeline that
// goes back to its first stage, idle gaps, whole-call recipes, process exits.
#include "core/record/recipe_requests.h"

#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "bpf/attrib.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

using testing::StageBuilder;
constexpr uint64_t kMs = StageBuilder::kMs;

// A recipe span of process `pid`: [start_ms, start_ms + wall_ms), all of it on CPU.
StageRecord call(uint32_t pid, StageKind kind, uint64_t start_ms, uint64_t wall_ms,
                 uint32_t extra_flags = 0) {
  Identity id;
  id.pid = pid;
  id.request_id = pid;
  id.synthetic = true;
  id.tenant = "t";
  id.agent = "node";
  return StageBuilder()
      .identity(id)
      .stage(kind)
      .flags(ATTRIB_SPAN_RECIPE | extra_flags)
      .start_ms(start_ms)
      .wall_ms(wall_ms)
      .component(Component::on_cpu, wall_ms * kMs)
      .build();
}

std::vector<StageRecord> stages_of(const std::vector<Record>& out) {
  std::vector<StageRecord> v;
  for (const auto& r : out)
    if (const auto* s = std::get_if<StageRecord>(&r)) v.push_back(*s);
  return v;
}
std::vector<RequestRecord> requests_of(const std::vector<Record>& out) {
  std::vector<RequestRecord> v;
  for (const auto& r : out)
    if (const auto* q = std::get_if<RequestRecord>(&r)) v.push_back(*q);
  return v;
}

TEST(RecipeRequests, TokenizeThenDecodesAreOneRequestWithAStagePerKind) {
  RecipeRequests g;
  std::vector<Record> out;
  // Two prompts as node-llama-cpp runs them: two tokenize calls, then one decode per token.
  for (int req = 0; req < 2; ++req) {
    const uint64_t t0 = 100 + req * 200;
    g.add(call(7, StageKind::prompt, t0, 1), out);
    g.add(call(7, StageKind::prompt, t0 + 2, 1), out);
    for (int tok = 0; tok < 30; ++tok)
      g.add(call(7, StageKind::generation, t0 + 5 + tok * 4, 3), out);
  }
  // The second prompt's tokenize ended the first request; nothing else did.
  ASSERT_EQ(requests_of(out).size(), 1u);
  const auto stages = stages_of(out);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].stage, "prompt");
  EXPECT_EQ(stages[0].wall_ns(), 2 * kMs);
  EXPECT_EQ(stages[1].stage, "generation");
  EXPECT_EQ(stages[1].wall_ns(), 90 * kMs) << "the time inside the 30 decode calls";
  EXPECT_EQ(stages[1].component_ns[static_cast<size_t>(Component::on_cpu)], 90 * kMs);
  const auto req = requests_of(out)[0];
  EXPECT_EQ(req.start_ns, 100 * kMs);
  EXPECT_EQ(req.end_ns, (105 + 29 * 4 + 3) * kMs) << "first call's start to last call's end";
  EXPECT_FALSE(req.id.synthetic);
  EXPECT_TRUE(req.recipe);
  EXPECT_EQ(req.in_calls_ns, 92 * kMs);
  EXPECT_EQ(req.call_component_ns[static_cast<size_t>(Component::on_cpu)], 92 * kMs);
  EXPECT_NE(req.id.request_id & RecipeRequests::kRequestIdBit, 0u);
  EXPECT_EQ(stages[1].id.request_id, req.id.request_id);
  EXPECT_EQ(req.id.tenant, "t");
  // The second request ends when the process goes idle.
  out.clear();
  g.flush(1000 * kMs, out);
  EXPECT_TRUE(out.empty()) << "only 0.4 s idle";
  g.flush(2000 * kMs, out);
  ASSERT_EQ(requests_of(out).size(), 1u);
  EXPECT_NE(requests_of(out)[0].id.request_id, req.id.request_id);
  EXPECT_EQ(g.open_requests(), 0u);
}

TEST(RecipeRequests, APipelineThatGoesBackBeginsARequest) {
  RecipeRequests g;
  std::vector<Record> out;
  // embedding -> retrieval -> generation, twice (the zero-code PyTorch + FAISS agent).
  for (int req = 0; req < 2; ++req) {
    const uint64_t t0 = 10 + req * 100;
    g.add(call(9, StageKind::embedding, t0, 5), out);
    g.add(call(9, StageKind::retrieval, t0 + 6, 2), out);
    g.add(call(9, StageKind::generation, t0 + 10, 1), out);
    g.add(call(9, StageKind::generation, t0 + 12, 1), out);
  }
  EXPECT_EQ(requests_of(out).size(), 1u);
  EXPECT_EQ(stages_of(out).size(), 3u);
}

TEST(RecipeRequests, AnIdleGapEndsARequestOfOneKind) {
  RecipeRequests g;
  std::vector<Record> out;
  g.add(call(3, StageKind::embedding, 0, 10), out);
  g.add(call(3, StageKind::embedding, 500, 10), out);  // 0.49 s later: the same request
  EXPECT_TRUE(out.empty());
  g.add(call(3, StageKind::embedding, 2000, 10), out);  // 1.49 s later: a new one
  ASSERT_EQ(requests_of(out).size(), 1u);
  EXPECT_EQ(stages_of(out)[0].wall_ns(), 20 * kMs);
}

TEST(RecipeRequests, ABusyLoopIsCutAtTheLongestRequest) {
  RecipeRequests g({.idle_gap_ns = 1000 * kMs, .max_request_ns = 100 * kMs});
  std::vector<Record> out;
  for (uint64_t t = 0; t < 250; t += 10) g.add(call(3, StageKind::embedding, t, 9), out);
  EXPECT_EQ(requests_of(out).size(), 2u);
}

TEST(RecipeRequests, AWholeCallRecipeIsARequestOfItsOwn) {
  RecipeRequests g;
  std::vector<Record> out;
  for (uint64_t t = 0; t < 50; t += 10) {
    g.add(call(5, StageKind::generation, t, 4, ATTRIB_SPAN_RECIPE_CALL), out);
  }
  EXPECT_EQ(requests_of(out).size(), 5u);
  EXPECT_EQ(stages_of(out).size(), 5u);
  EXPECT_EQ(g.open_requests(), 0u);
  EXPECT_EQ(requests_of(out)[4].end_ns - requests_of(out)[4].start_ns, 4 * kMs);
}

TEST(RecipeRequests, ProcessesAreGroupedApartAndEndWithTheirProcess) {
  RecipeRequests g;
  std::vector<Record> out;
  g.add(call(1, StageKind::generation, 0, 5), out);
  g.add(call(2, StageKind::prompt, 1, 5), out);  // another process: no effect on pid 1
  EXPECT_TRUE(out.empty());
  g.end_process(1, out);
  ASSERT_EQ(requests_of(out).size(), 1u);
  EXPECT_EQ(requests_of(out)[0].id.pid, 1u);
  g.end_process(1, out);  // twice: nothing more
  EXPECT_EQ(requests_of(out).size(), 1u);
  EXPECT_EQ(g.open_requests(), 1u);
}

TEST(RecipeRequests, BeyondTheProcessBoundCallsAreRequestsOfTheirOwn) {
  RecipeRequests g({.max_processes = 2});
  std::vector<Record> out;
  for (uint32_t pid = 1; pid <= 5; ++pid) g.add(call(pid, StageKind::generation, 0, 5), out);
  EXPECT_EQ(g.open_requests(), 2u);
  EXPECT_EQ(requests_of(out).size(), 3u);
}

}  // namespace
}  // namespace tailcause::core
