// SPDX-License-Identifier: Apache-2.0
// What a tenant asks and the vector its retrieval cache is asked with: the tenant's question
// pool, the Zipf choice among them, and the question -> tokens -> embedding -> unit query
// vector steps. One place for both the agent and bench/cache/agent_cache_bench.cpp, so the
// benchmark drives the cache with the vectors the agent really looks up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model.h"

namespace rag {

// A tenant's question pool: the same few hundred questions recur (Zipf-like, chosen by the
// worker), so the retrieval cache sees real hits, misses and stale entries.
std::vector<std::string> make_questions(const std::string& tenant);

// Zipf(1.0) over the question pool: a few questions are asked often, most rarely.
class QuestionPicker {
 public:
  explicit QuestionPicker(std::size_t n);
  // The question for a uniform draw u in [0, 1): rank 0 is the most frequent.
  uint32_t pick(double u) const;

 private:
  std::vector<double> cdf_;
};

// The tenant's model half that turns a question into its retrieval query. The steps are
// separate because the agent times each as a stage of its own (prompt, embedding, retrieval).
class QueryEncoder {
 public:
  // `dim`: the dimension of the tenant's index (the projection's output).
  QueryEncoder(std::string tenant, std::size_t dim);

  struct Prompt {
    std::vector<uint32_t> tokens;    // of the whole prompt: what the decoder is steered by
    std::vector<uint32_t> question;  // of the question alone: what retrieval searches with
    uint64_t key = 0;                // FNV-1a over the question's tokens
  };
  std::string build_prompt(const std::string& question) const;
  Prompt prompt(const std::string& question) const;
  std::vector<float> embed(std::span<const uint32_t> tokens) const;
  // Projection of the question's embedding to the index dimension, normalised: the vector the
  // index is searched and the cache looked up with. The question's, not the prompt's: the
  // prompt's boilerplate outweighs the question in a mean-pooled embedding (any two of a
  // tenant's 240 prompts are at cosine 0.98-0.998; their questions at 0.72-0.98), so a
  // semantic cache at 0.99 would answer one question with another's passages.
  std::vector<float> query(std::span<const float> question_embedding) const;
  // All steps at once.
  std::vector<float> query_for(const std::string& question) const;

  const std::string& tenant() const { return tenant_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const Weights& weights() const { return weights_; }  // the decoder shares them

 private:
  std::string tenant_;
  Tokenizer tokenizer_;
  Weights weights_;
  Matrix projection_;  // hidden -> index dimension
};

}  // namespace rag
