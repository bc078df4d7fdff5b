// SPDX-License-Identifier: Apache-2.0
#include "pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "rng.h"
#include "sdk_scope.h"

namespace rag {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A tenant's question pool: the same few hundred questions recur (Zipf-like, chosen by the
// worker), so the retrieval cache sees real hits, misses and stale entries.
std::vector<std::string> make_questions(const std::string& tenant) {
  static const char* verbs[] = {"configure", "restore", "migrate", "scale",   "debug", "monitor",
                                "secure",    "rotate",  "upgrade", "index",   "shard", "replicate",
                                "tune",      "audit",   "deploy",  "rollback"};
  static const char* nouns[] = {"database", "cluster",   "backup",    "certificate", "queue",
                                "gateway",  "scheduler", "embedding", "model",       "pipeline",
                                "service",  "volume",    "snapshot",  "token",       "policy",
                                "endpoint", "worker",    "replica",   "partition",   "dashboard"};
  static const char* states[] = {"slow",      "full",        "degraded",   "expired",
                                 "corrupted", "unreachable", "overloaded", "stale",
                                 "missing",   "encrypted",   "paused",     "saturated"};
  std::vector<std::string> out;
  SplitMix rng(fnv1a("questions:" + tenant));
  for (int i = 0; i < 240; ++i) {
    out.push_back(
        fmt::format("how do i {} the {} when the {} is {}?", verbs[rng.next() % std::size(verbs)],
                    nouns[rng.next() % std::size(nouns)], nouns[rng.next() % std::size(nouns)],
                    states[rng.next() % std::size(states)]));
  }
  return out;
}

void normalize(std::vector<float>& v) {
  float n = 0;
  for (float x : v) n += x * x;
  n = std::sqrt(n) + 1e-12f;
  for (float& x : v) x /= n;
}

}  // namespace

RagPipeline::RagPipeline(PipelineConfig config)
    : config_(std::move(config)),
      weights_(fnv1a("weights:" + config_.tenant)),
      index_(config_.index_path),
      cache_(config_.tenant, index_.dim(), 128, std::chrono::seconds(5), config_.top_k),
      questions_(make_questions(config_.tenant)) {
  projection_.init(index_.dim(), kHidden, fnv1a("projection:" + config_.tenant),
                   1.0f / std::sqrt(static_cast<float>(kHidden)));
  if (config_.cold_cache) index_.read_cold();
}

std::string RagPipeline::build_prompt(uint32_t question) const {
  const std::string& q = questions_[question % questions_.size()];
  return fmt::format(
      "System: You are a helpful assistant for tenant {}. Answer using the retrieved passages and "
      "cite them. "
      "Be concise and precise.\nContext: previous turn: the user said that this was not enough.\n"
      "Question: {}\nPlease explain the steps with an example, in detail.",
      config_.tenant, q);
}

std::vector<Neighbour> RagPipeline::retrieve(WorkerState& worker, uint64_t request_id,
                                             std::span<const float> query, uint64_t key) {
  if (config_.cold_cache) index_.drop_page_cache();
  auto found = cache_.lookup(query, request_id);  // fires the cache_lookup probe
  if (found.result == TAILCAUSE_CACHE_HIT) {
    ++counters_.cache_hit;
    return std::move(*found.value);
  }
  ++(found.result == TAILCAUSE_CACHE_STALE ? counters_.cache_stale : counters_.cache_miss);
  // IVF search, the probed lists split between this thread and the helper thread.
  auto lists = index_.closest_lists(query, config_.nprobe);
  std::vector<uint32_t> mine, theirs;
  for (std::size_t i = 0; i < lists.size(); ++i) (i % 2 ? theirs : mine).push_back(lists[i]);
  std::vector<Neighbour> helper_best;
  auto helper_done = worker.helper.run([&] {
    ContextProbe context(request_id);
    helper_best = index_.scan_lists(query, theirs, config_.top_k);
  });
  std::vector<Neighbour> best;
  try {
    best = index_.scan_lists(query, mine, config_.top_k);
  } catch (...) {
    helper_done.wait();  // the helper still uses our locals
    throw;
  }
  helper_done.get();
  best = merge_top_k(std::move(best), helper_best, config_.top_k);
  cache_.store(query, best);
  return best;
}

std::string RagPipeline::respond(const Generation& gen, const std::vector<Neighbour>& docs,
                                 const std::string& tool_answer) const {
  std::string text;
  for (uint32_t t : gen.tokens) {
    if (!text.empty()) text.push_back(' ');
    text += tokenizer_.piece(t);
  }
  std::string citations;
  for (const auto& d : docs) citations += fmt::format(" [doc {} ({:.3f})]", d.row, d.score);
  auto tool = nlohmann::json::parse(tool_answer);
  return fmt::format(
      "{{\"tenant\":\"{}\",\"answer\":\"{}\",\"citations\":\"{}\",\"record\":\"{}\",\"entropy\":{:."
      "4f}}}",
      config_.tenant, text, citations, tool.value("record", "?"), gen.entropy);
}

bool RagPipeline::serve(WorkerState& worker, uint64_t request_id, const std::string& trace_id,
                        uint32_t question) {
  RequestProbe request(request_id, config_.tenant.c_str(), "rag-agent", trace_id.c_str());
  tailcause_stage current = TAILCAUSE_STAGE_PROMPT;
  // Runs one stage under its probes and records its wall time (or its error).
  auto stage = [&](tailcause_stage s, auto&& body) {
    current = s;
    StageProbe probe(request_id, s);
    auto t0 = Clock::now();
    try {
      auto result = body();
      stats_.add(stage_name(s), seconds_since(t0));
      return result;
    } catch (...) {
      stats_.add_error(stage_name(s));
      throw;
    }
  };
  try {
    // A pair, not a structured binding: clang 14 cannot capture those in the lambdas below.
    const auto prompt = stage(TAILCAUSE_STAGE_PROMPT, [&] {
      auto t = tokenizer_.encode(build_prompt(question));
      uint64_t k = 0xcbf29ce484222325ULL;
      for (uint32_t id : tokenizer_.encode(questions_[question % questions_.size()]))
        k = (k ^ id) * 0x100000001b3ULL;
      return std::pair{std::move(t), k};
    });
    const auto& tokens = prompt.first;
    const uint64_t key = prompt.second;
    auto embedding = stage(TAILCAUSE_STAGE_EMBEDDING, [&] { return embed(weights_, tokens); });
    auto docs = stage(TAILCAUSE_STAGE_RETRIEVAL, [&] {
      std::vector<float> query(index_.dim());
      projection_.apply(embedding, query);
      normalize(query);
      return retrieve(worker, request_id, query, key);
    });
    auto generation = stage(TAILCAUSE_STAGE_GENERATION, [&] {
      std::vector<float> context = embedding;  // the retrieved passages steer the decoder
      for (const auto& d : docs)
        for (std::size_t j = 0; j < kHidden; ++j)
          context[j] += 0.05f * d.score * (((d.row * 31 + j) % 7) - 3.0f);
      return generate(weights_, request_id, context, config_.output_tokens, request_id, kv_,
                      config_.entropy);
    });
    counters_.tokens += generation.tokens.size();
    auto tool_answer = stage(TAILCAUSE_STAGE_TOOL, [&] {
      return worker.tool.call(config_.tenant, questions_[question % questions_.size()],
                              config_.slow_peer ? 300 : 0);
    });
    auto answer =
        stage(TAILCAUSE_STAGE_RESPONSE, [&] { return respond(generation, docs, tool_answer); });
    if (answer.empty()) throw std::runtime_error("empty answer");
    ++counters_.completed;
    return true;
  } catch (const std::exception& e) {
    request.set_status(1 + static_cast<int64_t>(current));
    uint64_t n = ++counters_.failed;
    if (n <= 5 || n % 100 == 0)
      spdlog::warn("request {:#x} failed in {} (failure #{}): {}", request_id, stage_name(current),
                   n, e.what());
    return false;
  }
}

}  // namespace rag
