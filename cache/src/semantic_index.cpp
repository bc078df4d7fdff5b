// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/semantic_index.h"

#include <hnswlib/hnswlib.h>

#include "tailcause/cache/vector_check.h"

namespace tailcause::cache {
namespace {

// Our own inner-product space: hnswlib's InnerProductSpace writes process-wide SIMD function
// pointers in its constructor, a data race when one tenant is created while another searches.
float ip_distance(const void* a, const void* b, const void* dim) {
  return 1.0f - dot(static_cast<const float*>(a), static_cast<const float*>(b),
                    *static_cast<const std::size_t*>(dim));
}

class CosineSpace : public hnswlib::SpaceInterface<float> {
 public:
  explicit CosineSpace(std::size_t dim) : dim_(dim) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return ip_distance; }
  void* get_dist_func_param() override { return &dim_; }

 private:
  std::size_t dim_;
};

}  // namespace

struct SemanticIndex::Impl {
  Impl(std::size_t dim, const IndexParams& p, std::size_t capacity)
      : space(dim), graph(&space, capacity, p.m, p.ef_construction) {
    graph.setEf(p.ef_search);
  }
  CosineSpace space;
  hnswlib::HierarchicalNSW<float> graph;
};

SemanticIndex::SemanticIndex(std::size_t dim, IndexParams params)
    : dim_(dim), params_(params), impl_(std::make_unique<Impl>(dim, params, 1024)) {}

SemanticIndex::~SemanticIndex() = default;

std::size_t SemanticIndex::bytes_per_element(std::size_t dim, const IndexParams& p) {
  // hnswlib's level-0 record (2M links + count, the vector, the label), our copy of the
  // vector, and about 64 bytes of hash-map nodes and upper-level links.
  return (2 * p.m * sizeof(uint32_t) + sizeof(uint32_t)) + dim * sizeof(float) +
         sizeof(hnswlib::labeltype) + dim * sizeof(float) + 64;
}

void SemanticIndex::add(uint64_t label, std::span<const float> v) {
  auto& g = impl_->graph;
  if (g.cur_element_count >= g.max_elements_) g.resizeIndex(g.max_elements_ * 2);
  g.addPoint(v.data(), label);
  live_[label].assign(v.begin(), v.end());
}

void SemanticIndex::remove(uint64_t label) {
  if (live_.erase(label) == 0) return;
  impl_->graph.markDelete(label);
  if (++deleted_ > 1024 && deleted_ > live_.size()) rebuild();
}

void SemanticIndex::rebuild() {
  auto fresh = std::make_unique<Impl>(dim_, params_, std::max<std::size_t>(1024, live_.size() * 2));
  for (const auto& [label, v] : live_) fresh->graph.addPoint(v.data(), label);
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

std::optional<SemanticIndex::Match> SemanticIndex::nearest(std::span<const float> v) const {
  if (live_.empty()) return std::nullopt;
  auto found = impl_->graph.searchKnn(v.data(), 1);
  if (found.empty()) return std::nullopt;
  return Match{found.top().second, 1.0f - found.top().first};
}

}  // namespace tailcause::cache
