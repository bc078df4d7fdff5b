// SPDX-License-Identifier: Apache-2.0
// The agent's "models": a word-piece tokenizer, an embedding MLP and a small decoder whose token
// loop does real matrix-vector products and a softmax over the vocabulary. Weights are
// deterministic pseudo-random numbers: the arithmetic, not the answers, is what matters here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rag {

inline constexpr std::size_t kHidden = 256;
inline constexpr std::size_t kVocab = 4096;
inline constexpr std::size_t kDecoderLayers = 2;

class Tokenizer {
 public:
  Tokenizer();
  // Lower-cases, splits on anything but letters and digits, then greedy longest-match word
  // pieces; pieces outside the vocabulary hash into it.
  std::vector<uint32_t> encode(std::string_view text) const;
  const std::string& piece(uint32_t id) const { return pieces_[id % pieces_.size()]; }
  // Words the prompt generator draws from (they are whole pieces of the vocabulary).
  static const std::vector<std::string_view>& lexicon();

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> pieces_;
  std::size_t max_piece_ = 1;
};

// Row-major dense matrix with y = W x.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<float> w;
  void init(std::size_t r, std::size_t c, uint64_t seed, float scale);
  void apply(std::span<const float> x, std::span<float> y) const;
};

class Weights {
 public:
  explicit Weights(uint64_t seed);
  Matrix embeddings;  // kVocab x kHidden, shared by embedder and decoder input
  Matrix output;      // kVocab x kHidden: decoder state -> logits
  Matrix mlp1, mlp2;  // embedder: two kHidden x kHidden layers
  std::vector<float> bias1, bias2;
  Matrix decoder[kDecoderLayers];  // kHidden x kHidden each
};

// Residual two-layer MLP over each prompt token, mean-pooled and normalised.
std::vector<float> embed(const Weights& w, std::span<const uint32_t> tokens);

// Where the decoder appends its per-token state. The lock fault runs a compactor on it: every
// `every` appends the cache is full and the appender waits (a futex) while the compactor works
// with the mutex held. The wait is per token, so the fault's cost does not shrink on a faster
// CPU or when the compactor is scheduled late.
class KvCache {
 public:
  void append(std::span<const float> state);
  // The compactor's loop (its own thread) until stop_compactor(): each compaction holds the
  // mutex for `hold`, touching the cache like a compaction would.
  void run_compactor(std::size_t every, std::chrono::microseconds hold);
  void stop_compactor();

 private:
  bool compaction_due() const { return !stopped_ && every_ > 0 && since_compaction_ >= every_; }

  std::mutex mu_;
  std::condition_variable full_;  // the compactor waits for a full cache
  std::condition_variable room_;  // appenders wait for the compaction
  std::vector<float> ring_ = std::vector<float>(kHidden * 256, 0.0f);
  std::size_t next_ = 0;
  std::size_t every_ = 0;  // 0: no compactor
  std::size_t since_compaction_ = 0;
  bool stopped_ = false;
};

struct Generation {
  std::vector<uint32_t> tokens;
  double entropy = 0;  // nats, of the last output distribution
};

// Token loop: for each output token, kDecoderLayers matrix-vector layers (layer_begin/end probes,
// batch 1), logits over the vocabulary, softmax, sampling, token probe. The output's entropy
// goes to the output_quality probe once per request, or, under the entropy fault, once per token
// with the first half of the answer sampled at the temperature / kEntropyFaultHeat and the
// second at x kEntropyFaultHeat (a confident model losing confidence mid-answer: its outputs'
// entropy jumps over the request's own baseline).
inline constexpr float kEntropyFaultHeat = 4.0f;
Generation generate(const Weights& w, uint64_t request_id, std::span<const float> context,
                    std::size_t n_tokens, uint64_t seed, KvCache& kv, bool entropy_fault = false);

}  // namespace rag
