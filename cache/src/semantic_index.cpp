// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/semantic_index.h"

#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tailcause/cache/vector_check.h"

namespace tailcause::cache {
namespace {

// The graph walk is memory-bound: it reads a stored vector per distance. So by default the
// graph holds each vector as int8 components with one scale (max |x| / 127), a quarter of the
// float bytes; the few candidates the walk returns are ranked again on the exact float vectors
// (kept for rebuilds anyway), so the match and its similarity are exact either way.
constexpr std::size_t kCandidates = 4;

// How the graph stores a vector and measures 1 - cosine. Our own space, not hnswlib's
// InnerProductSpace, which writes process-wide SIMD function pointers in its constructor (a
// data race when one tenant is created while another searches).
class CosineSpace : public hnswlib::SpaceInterface<float> {
 public:
  CosineSpace(std::size_t dim, bool quantized) : dim_(dim), quantized_(quantized) {}
  size_t get_data_size() override { return quantized_ ? dim_ + sizeof(float) : dim_ * 4; }
  hnswlib::DISTFUNC<float> get_dist_func() override {
    return quantized_ ? int8_distance : float_distance;
  }
  void* get_dist_func_param() override { return &dim_; }

  // `v` as the graph stores it, into `out` (get_data_size() bytes).
  void encode(const float* v, std::vector<uint8_t>& out) {
    out.resize(get_data_size());
    if (!quantized_) {
      std::memcpy(out.data(), v, out.size());
      return;
    }
    float max = 0;
    for (std::size_t i = 0; i < dim_; ++i) max = std::max(max, std::fabs(v[i]));
    const float scale = max > 0 ? max / 127.0f : 1.0f;
    auto* q = reinterpret_cast<int8_t*>(out.data());
    for (std::size_t i = 0; i < dim_; ++i)
      q[i] = static_cast<int8_t>(std::lrint(std::clamp(v[i] / scale, -127.0f, 127.0f)));
    std::memcpy(out.data() + dim_, &scale, sizeof scale);
  }

 private:
  static float float_distance(const void* a, const void* b, const void* dim) {
    return 1.0f - dot(static_cast<const float*>(a), static_cast<const float*>(b),
                      *static_cast<const std::size_t*>(dim));
  }
  static float int8_distance(const void* a, const void* b, const void* param) {
    const std::size_t dim = *static_cast<const std::size_t*>(param);
    const auto* x = static_cast<const int8_t*>(a);
    const auto* y = static_cast<const int8_t*>(b);
    float sx, sy;
    std::memcpy(&sx, x + dim, sizeof sx);
    std::memcpy(&sy, y + dim, sizeof sy);
    return 1.0f - static_cast<float>(dot_i8(x, y, dim)) * sx * sy;
  }
  std::size_t dim_;
  bool quantized_;
};

}  // namespace

struct SemanticIndex::Impl {
  Impl(std::size_t dim, const IndexParams& p, std::size_t capacity)
      : space(dim, p.quantized), graph(&space, capacity, p.m, p.ef_construction) {
    graph.setEf(p.ef_search);
  }
  void add(const float* v, uint64_t label) {
    std::vector<uint8_t> stored;
    space.encode(v, stored);
    graph.addPoint(stored.data(), label);
  }
  CosineSpace space;
  hnswlib::HierarchicalNSW<float> graph;
};

SemanticIndex::SemanticIndex(std::size_t dim, IndexParams params)
    : dim_(dim), params_(params), impl_(std::make_unique<Impl>(dim, params, 1024)) {}

SemanticIndex::~SemanticIndex() = default;

std::size_t SemanticIndex::bytes_per_element(std::size_t dim, const IndexParams& p) {
  // hnswlib's level-0 record (2M links + count, the stored vector, the label), our float copy
  // of the vector, and about 64 bytes of hash-map nodes and upper-level links.
  const std::size_t stored = p.quantized ? dim + sizeof(float) : dim * sizeof(float);
  return (2 * p.m * sizeof(uint32_t) + sizeof(uint32_t)) + stored + sizeof(hnswlib::labeltype) +
         dim * sizeof(float) + 64;
}

void SemanticIndex::add(uint64_t label, std::span<const float> v) {
  auto& g = impl_->graph;
  if (g.cur_element_count >= g.max_elements_) g.resizeIndex(g.max_elements_ * 2);
  impl_->add(v.data(), label);
  live_[label].assign(v.begin(), v.end());
}

void SemanticIndex::remove(uint64_t label) {
  if (live_.erase(label) == 0) return;
  impl_->graph.markDelete(label);
  if (++deleted_ > 1024 && deleted_ > live_.size()) rebuild();
}

void SemanticIndex::rebuild() {
  auto fresh = std::make_unique<Impl>(dim_, params_, std::max<std::size_t>(1024, live_.size() * 2));
  for (const auto& [label, v] : live_) fresh->add(v.data(), label);
  impl_ = std::move(fresh);
  deleted_ = 0;
}

void SemanticIndex::set_ef(std::size_t ef) {
  params_.ef_search = ef;
  impl_->graph.setEf(ef);
}

void SemanticIndex::clear() {
  live_.clear();
  impl_ = std::make_unique<Impl>(dim_, params_, 1024);
  deleted_ = 0;
}

std::vector<SemanticIndex::Match> SemanticIndex::candidates(std::span<const float> v) const {
  std::vector<Match> out;
  if (live_.empty()) return out;
  thread_local std::vector<uint8_t> q;  // no allocation per lookup
  impl_->space.encode(v.data(), q);
  auto found = impl_->graph.searchKnn(q.data(), kCandidates);
  for (; !found.empty(); found.pop()) {
    const auto it = live_.find(found.top().second);
    if (it == live_.end()) continue;
    out.push_back(Match{it->first, dot(v.data(), it->second.data(), dim_)});
  }
  // Ranked again on the float vectors; ties by label, so the order never depends on the walk.
  std::sort(out.begin(), out.end(), [](const Match& a, const Match& b) {
    return a.similarity != b.similarity ? a.similarity > b.similarity : a.label < b.label;
  });
  return out;
}

std::optional<SemanticIndex::Match> SemanticIndex::nearest(std::span<const float> v) const {
  auto found = candidates(v);
  if (found.empty()) return std::nullopt;
  return found.front();
}

}  // namespace tailcause::cache
