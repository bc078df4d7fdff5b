// SPDX-License-Identifier: Apache-2.0
// The approximate nearest-neighbour index behind semantic lookups: hnswlib's HNSW graph
// (Debian's libhnswlib-dev, header-only) over unit vectors with an inner-product distance,
// walked on int8 copies of them and the candidates ranked again exactly.
// Evicted entries are marked deleted; once deleted slots outnumber live ones the graph is
// rebuilt from the live vectors, so churn does not grow it without bound. Not thread-safe:
// the owning tenant's lock guards it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace tailcause::cache {

struct IndexParams {
  std::size_t m = 16;                 // graph degree
  std::size_t ef_construction = 100;  // build-time candidate list
  std::size_t ef_search = 64;         // query-time candidate list (recall vs speed)
  // The graph walks int8 copies of the vectors (a quarter of the memory it reads), the best
  // few candidates ranked again on the float vectors; false: it walks the float vectors.
  bool quantized = true;
};

class SemanticIndex {
 public:
  SemanticIndex(std::size_t dim, IndexParams params);
  ~SemanticIndex();
  SemanticIndex(const SemanticIndex&) = delete;
  SemanticIndex& operator=(const SemanticIndex&) = delete;

  void add(uint64_t label, std::span<const float> unit_vector);
  void remove(uint64_t label);
  struct Match {
    uint64_t label;
    float similarity;  // cosine
  };
  std::optional<Match> nearest(std::span<const float> unit_vector) const;
  // The walk's best few candidates (up to 4), most similar first, each with its exact cosine:
  // a caller can pass over a match it cannot use (a stale entry) for the next one.
  std::vector<Match> candidates(std::span<const float> unit_vector) const;
  void clear();
  void set_ef(std::size_t ef);  // query-time candidate list
  std::size_t size() const { return live_.size(); }
  // Bytes the graph holds per element (vector copies + level-0 links + label maps): what the
  // cache charges to the tenant's quota for the index.
  static std::size_t bytes_per_element(std::size_t dim, const IndexParams& params);

 private:
  struct Impl;
  void rebuild();
  std::size_t dim_;
  IndexParams params_;
  std::unique_ptr<Impl> impl_;
  std::unordered_map<uint64_t, std::vector<float>> live_;
  std::size_t deleted_ = 0;
};

}  // namespace tailcause::cache
