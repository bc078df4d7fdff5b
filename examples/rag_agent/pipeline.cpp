// SPDX-License-Identifier: Apache-2.0
#include "pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "rng.h"
#include "sdk_scope.h"

namespace rag {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The cache-bust fault: the question as a client sends it that puts the user's recent history
// into each query (a classic cache-key bug of RAG agents). Twelve words of history, drawn per
// request, weigh about as much as the question in the mean-pooled embedding: no two requests
// share an exact key, and the same question asked twice lands below the semantic threshold.
std::string with_history(const std::string& question, uint64_t request_id) {
  const auto& words = Tokenizer::lexicon();
  SplitMix rng(fnv1a(fmt::format("history:{}", request_id)));
  std::string out = question + " earlier i asked about";
  for (int i = 0; i < 12; ++i) (out += ' ') += words[rng.next() % words.size()];
  return out;
}

}  // namespace

RagPipeline::RagPipeline(PipelineConfig config)
    : config_(std::move(config)),
      index_(config_.index_path),
      encoder_(config_.tenant, index_.dim()),
      questions_(make_questions(config_.tenant)) {
  if (config_.cold_cache) index_.read_cold();
  if (config_.cache_entries == 0) return;
  cache_.emplace(config_.tenant, index_.dim(), config_.cache_entries, kRetrievalCacheTtl,
                 config_.top_k);
  if (!config_.cold_cache) preload_cache();
  if (config_.cache_loop) {
    // Warm-up runs the agent's own retrieval (on the loop's thread, outside any request) for
    // the vectors the library proposes.
    cache_->library().set_loader(
        [this](const std::string&, const std::vector<std::vector<float>>& vectors) {
          std::vector<std::optional<std::string>> values;
          for (const auto& v : vectors)
            values.push_back(RetrievalCache::encode(
                index_.scan_lists(v, index_.closest_lists(v, config_.nprobe), config_.top_k)));
          return values;
        });
    loop_ = std::make_unique<tailcause::cache::CacheFeedback>(
        cache_->library(), tailcause::cache::sdk_verdict_source());
    loop_->start();
  }
}

void RagPipeline::preload_cache() {
  // Question ranks are the picker's: rank 0 is the most asked.
  const std::size_t n = std::min({kPreloadedQuestions, config_.cache_entries, questions_.size()});
  for (std::size_t rank = 0; rank < n; ++rank) {
    auto query = encoder_.query_for(questions_[rank]);
    cache_->store(query, index_.scan_lists(query, index_.closest_lists(query, config_.nprobe),
                                           config_.top_k));
  }
}

std::optional<tailcause::cache::FeedbackStats> RagPipeline::loop_stats() const {
  if (!loop_) return std::nullopt;
  return loop_->stats();
}

std::vector<Neighbour> RagPipeline::retrieve(WorkerState& worker, uint64_t request_id,
                                             std::span<const float> query, uint64_t key) {
  if (config_.cold_cache) index_.drop_page_cache();
  if (cache_) {
    auto found = cache_->lookup(query, request_id);  // fires the cache_lookup probe
    if (found.result == TAILCAUSE_CACHE_HIT) {
      ++counters_.cache_hit;
      return std::move(*found.value);
    }
    ++(found.result == TAILCAUSE_CACHE_STALE ? counters_.cache_stale : counters_.cache_miss);
  }
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
  if (cache_) cache_->store(query, best);
  return best;
}

std::string RagPipeline::respond(const Generation& gen, const std::vector<Neighbour>& docs,
                                 const std::string& tool_answer) const {
  std::string text;
  for (uint32_t t : gen.tokens) {
    if (!text.empty()) text.push_back(' ');
    text += encoder_.tokenizer().piece(t);
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
  const std::string& asked = questions_[question % questions_.size()];
  const std::string text = config_.cache_bust ? with_history(asked, request_id) : asked;
  try {
    const auto prompt = stage(TAILCAUSE_STAGE_PROMPT, [&] { return encoder_.prompt(text); });
    // The prompt's embedding steers the decoder; the question's is what retrieval searches with.
    // A pair, not a structured binding: clang 14 cannot capture those in the lambdas below.
    const auto embeddings = stage(TAILCAUSE_STAGE_EMBEDDING, [&] {
      return std::pair{encoder_.embed(prompt.tokens), encoder_.embed(prompt.question)};
    });
    const auto& embedding = embeddings.first;
    auto docs = stage(TAILCAUSE_STAGE_RETRIEVAL, [&] {
      return retrieve(worker, request_id, encoder_.query(embeddings.second), prompt.key);
    });
    auto generation = stage(TAILCAUSE_STAGE_GENERATION, [&] {
      std::vector<float> context = embedding;  // the retrieved passages steer the decoder
      for (const auto& d : docs)
        for (std::size_t j = 0; j < kHidden; ++j)
          context[j] += 0.05f * d.score * (((d.row * 31 + j) % 7) - 3.0f);
      return generate(encoder_.weights(), request_id, context, config_.output_tokens, request_id,
                      kv_, config_.entropy);
    });
    counters_.tokens += generation.tokens.size();
    auto tool_answer = stage(TAILCAUSE_STAGE_TOOL, [&] {
      return worker.tool.call(config_.tenant, text, config_.slow_peer ? 300 : 0);
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
