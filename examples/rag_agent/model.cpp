// SPDX-License-Identifier: Apache-2.0
#include "model.h"

#include "linalg.h"

#include <tailcause/sdk.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <thread>

#include "rng.h"
#include "sdk_scope.h"

namespace rag {
namespace {

void layer_norm(std::span<float> x) {
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (float v : x) var += (v - mean) * (v - mean);
  float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(x.size()) + 1e-5));
  for (float& v : x) v = static_cast<float>(v - mean) * inv;
}

}  // namespace

const std::vector<std::string_view>& Tokenizer::lexicon() {
  static const std::vector<std::string_view> words = {
      "how",       "do",        "i",           "the",        "a",         "an",        "of",
      "to",        "in",        "on",          "for",        "with",      "when",      "is",
      "are",       "my",        "what",        "why",        "which",     "should",    "can",
      "we",        "you",       "it",          "after",      "before",    "during",    "without",
      "configure", "restore",   "migrate",     "scale",      "debug",     "monitor",   "secure",
      "rotate",    "upgrade",   "index",       "shard",      "replicate", "cache",     "throttle",
      "retry",     "deploy",    "rollback",    "benchmark",  "tune",      "audit",     "database",
      "cluster",   "backup",    "certificate", "queue",      "gateway",   "scheduler", "embedding",
      "model",     "pipeline",  "service",     "volume",     "snapshot",  "token",     "policy",
      "tenant",    "quota",     "endpoint",    "worker",     "replica",   "partition", "dashboard",
      "alert",     "invoice",   "contract",    "shipment",   "warehouse", "order",     "customer",
      "payment",   "refund",    "catalog",     "ticket",     "incident",  "latency",   "throughput",
      "memory",    "disk",      "network",     "cpu",        "storage",   "region",    "zone",
      "kernel",    "driver",    "firmware",    "license",    "slow",      "full",      "degraded",
      "expired",   "corrupted", "unreachable", "overloaded", "stale",     "missing",   "encrypted",
      "paused",    "saturated", "throttled",   "idle",       "busy",      "large",     "small",
      "new",       "old",       "you",         "are",        "helpful",   "assistant", "answer",
      "using",     "retrieved", "passages",    "cite",       "them",      "be",        "concise",
      "and",       "precise",   "question",    "context",    "user",      "system",    "previous",
      "turn",      "said",      "that",        "this",       "was",       "not",       "enough",
      "please",    "explain",   "steps",       "example",    "detail",    "ing",       "ed",
      "ion",       "er",        "ly",          "ment",       "ness",      "able",      "re",
      "un",        "pre",       "de",          "s",          "es"};
  return words;
}

Tokenizer::Tokenizer() {
  auto add = [&](std::string piece) {
    if (pieces_.size() >= kVocab || ids_.count(piece)) return;
    max_piece_ = std::max(max_piece_, piece.size());
    ids_.emplace(piece, static_cast<uint32_t>(pieces_.size()));
    pieces_.push_back(std::move(piece));
  };
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) add(std::string(1, c));
  for (auto w : lexicon()) add(std::string(w));
  for (auto w : lexicon())
    for (std::size_t len = 2; len < w.size() && len <= 4; ++len) add(std::string(w.substr(0, len)));
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  std::string word;
  auto flush = [&] {
    std::size_t pos = 0;
    while (pos < word.size()) {
      std::size_t len = std::min(max_piece_, word.size() - pos);
      for (; len > 1; --len)
        if (ids_.count(word.substr(pos, len))) break;
      auto it = ids_.find(word.substr(pos, len));
      out.push_back(it != ids_.end()
                        ? it->second
                        : static_cast<uint32_t>(fnv1a(word.substr(pos, len)) % kVocab));
      pos += len;
    }
    word.clear();
  };
  for (unsigned char c : text) {
    if (std::isalnum(c))
      word.push_back(static_cast<char>(std::tolower(c)));
    else if (!word.empty())
      flush();
  }
  if (!word.empty()) flush();
  return out;
}

void Matrix::init(std::size_t r, std::size_t c, uint64_t seed, float scale) {
  rows = r, cols = c;
  w.resize(r * c);
  SplitMix rng(seed);
  for (float& x : w) x = scale * rng.normal();
}

void Matrix::apply(std::span<const float> x, std::span<float> y) const {
  for (std::size_t r = 0; r < rows; ++r) y[r] = dot(&w[r * cols], x.data(), cols);
}

Weights::Weights(uint64_t seed) {
  const float s = 1.0f / std::sqrt(static_cast<float>(kHidden));
  embeddings.init(kVocab, kHidden, seed ^ 1, 1.0f);
  output.init(kVocab, kHidden, seed ^ 4, s);
  mlp1.init(kHidden, kHidden, seed ^ 2, s);
  mlp2.init(kHidden, kHidden, seed ^ 3, s);
  bias1.assign(kHidden, 0.01f);
  bias2.assign(kHidden, 0.0f);
  for (std::size_t l = 0; l < kDecoderLayers; ++l)
    decoder[l].init(kHidden, kHidden, seed ^ (10 + l), s);
}

std::vector<float> embed(const Weights& w, std::span<const uint32_t> tokens) {
  // Sinusoidal positions, so word order matters.
  static const std::vector<float> inv_freq = [] {
    std::vector<float> f(kHidden);
    for (std::size_t j = 0; j < kHidden; ++j)
      f[j] = std::pow(100.0f, -static_cast<float>(j) / kHidden);
    return f;
  }();
  std::vector<float> pooled(kHidden, 0.0f), x(kHidden), h(kHidden), y(kHidden);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const float* e = &w.embeddings.w[(tokens[t] % kVocab) * kHidden];
    for (std::size_t j = 0; j < kHidden; ++j)
      x[j] = e[j] + 0.1f * std::sin(static_cast<float>(t) * inv_freq[j]);
    w.mlp1.apply(x, h);
    for (std::size_t j = 0; j < kHidden; ++j) h[j] = std::max(0.0f, h[j] + w.bias1[j]);
    w.mlp2.apply(h, y);
    for (std::size_t j = 0; j < kHidden; ++j) pooled[j] += x[j] + y[j] + w.bias2[j];
  }
  layer_norm(pooled);
  return pooled;
}

void KvCache::append(std::span<const float> state) {
  std::unique_lock lock(mu_);
  room_.wait(lock, [&] { return !compaction_due(); });
  std::copy(state.begin(), state.end(), ring_.begin() + static_cast<long>(next_ * kHidden));
  next_ = (next_ + 1) % (ring_.size() / kHidden);
  if (every_ > 0 && ++since_compaction_ == every_) full_.notify_one();
}

void KvCache::run_compactor(std::size_t every, std::chrono::microseconds hold) {
  std::unique_lock lock(mu_);
  every_ = every;
  while (true) {
    full_.wait(lock, [&] { return stopped_ || compaction_due(); });
    if (stopped_) break;
    auto until = std::chrono::steady_clock::now() + hold;
    for (float& v : ring_)
      v *= 0.5f;  // the short real part; the rest is waiting with the lock held
    std::this_thread::sleep_until(until);
    since_compaction_ = 0;
    room_.notify_all();
  }
  every_ = 0;
}

void KvCache::stop_compactor() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  full_.notify_all();
  room_.notify_all();
}

Generation generate(const Weights& w, uint64_t request_id, std::span<const float> context,
                    std::size_t n_tokens, uint64_t seed, KvCache& kv, bool entropy_fault) {
  SplitMix rng(seed);
  Generation out;
  std::vector<float> x(kHidden), h(kHidden), logits(kVocab);
  uint32_t prev = static_cast<uint32_t>(rng.next() % kVocab);
  for (std::size_t i = 0; i < n_tokens; ++i) {
    const float* e = &w.embeddings.w[prev * kHidden];
    for (std::size_t j = 0; j < kHidden; ++j) x[j] = e[j] + context[j];
    layer_norm(x);
    for (std::size_t l = 0; l < kDecoderLayers; ++l) {
      LayerProbe layer(l, 1);
      w.decoder[l].apply(x, h);
      for (std::size_t j = 0; j < kHidden; ++j) x[j] += std::tanh(h[j]);
    }
    layer_norm(x);
    w.output.apply(x, logits);  // kVocab x kHidden: the largest product of the token loop
    float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    float temperature = 0.7f;
    if (entropy_fault) temperature *= i < n_tokens / 2 ? 1 / kEntropyFaultHeat : kEntropyFaultHeat;
    for (float& v : logits) sum += (v = std::exp((v - max_logit) / temperature));
    double pick = rng.uniform() * sum, acc = 0, entropy = 0;
    uint32_t chosen = kVocab - 1;
    bool picked = false;
    for (std::size_t v = 0; v < kVocab; ++v) {
      double p = logits[v] / sum;
      if (p > 0) entropy -= p * std::log(p);
      acc += logits[v];
      if (!picked && acc >= pick) chosen = static_cast<uint32_t>(v), picked = true;
    }
    kv.append(x);
    tailcause_token(request_id, i);
    if (entropy_fault) tailcause_output_quality(request_id, static_cast<uint64_t>(entropy * 1e6));
    out.tokens.push_back(chosen);
    out.entropy = entropy;
    prev = chosen;
  }
  if (!entropy_fault)
    tailcause_output_quality(request_id, static_cast<uint64_t>(out.entropy * 1e6));
  return out;
}

}  // namespace rag
