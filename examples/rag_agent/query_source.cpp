// SPDX-License-Identifier: Apache-2.0
#include "query_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "rng.h"

namespace rag {
namespace {

void normalize(std::vector<float>& v) {
  float n = 0;
  for (float x : v) n += x * x;
  n = std::sqrt(n) + 1e-12f;
  for (float& x : v) x /= n;
}

}  // namespace

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

QuestionPicker::QuestionPicker(std::size_t n) {
  double acc = 0;
  for (std::size_t i = 1; i <= n; ++i) cdf_.push_back(acc += 1.0 / static_cast<double>(i));
  for (double& c : cdf_) c /= acc;
}

uint32_t QuestionPicker::pick(double u) const {
  return static_cast<uint32_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
}

QueryEncoder::QueryEncoder(std::string tenant, std::size_t dim)
    : tenant_(std::move(tenant)), weights_(fnv1a("weights:" + tenant_)) {
  projection_.init(dim, kHidden, fnv1a("projection:" + tenant_),
                   1.0f / std::sqrt(static_cast<float>(kHidden)));
}

std::string QueryEncoder::build_prompt(const std::string& question) const {
  return fmt::format(
      "System: You are a helpful assistant for tenant {}. Answer using the retrieved passages and "
      "cite them. "
      "Be concise and precise.\nContext: previous turn: the user said that this was not enough.\n"
      "Question: {}\nPlease explain the steps with an example, in detail.",
      tenant_, question);
}

QueryEncoder::Prompt QueryEncoder::prompt(const std::string& question) const {
  Prompt p{tokenizer_.encode(build_prompt(question)), tokenizer_.encode(question),
           0xcbf29ce484222325ULL};
  for (uint32_t id : p.question) p.key = (p.key ^ id) * 0x100000001b3ULL;
  return p;
}

std::vector<float> QueryEncoder::embed(std::span<const uint32_t> tokens) const {
  return rag::embed(weights_, tokens);
}

std::vector<float> QueryEncoder::query(std::span<const float> embedding) const {
  std::vector<float> q(projection_.rows);
  projection_.apply(embedding, q);
  normalize(q);
  return q;
}

std::vector<float> QueryEncoder::query_for(const std::string& question) const {
  return query(embed(prompt(question).question));
}

}  // namespace rag
