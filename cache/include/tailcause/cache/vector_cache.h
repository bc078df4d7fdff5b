// SPDX-License-Identifier: Apache-2.0
// The vector cache: per tenant, an exact map (model version + quantised vector) and an HNSW
// index for semantic lookups (nearest stored vector at cosine >= threshold), LRU order with a
// TTL (an entry older than the TTL is reported stale, its age is the hit's staleness), TinyLFU
// admission when the quota is full, quotas rebalanced from a competition index, warm-up from
// recorded query patterns, and a model version change that invalidates everything (counted).
// Every lookup fires the SDK's cache_lookup probe; every action fires cache_action.
// Thread-safe: one lock per tenant, a shared lock for the tenant table.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tailcause/cache/diagnostics.h"
#include "tailcause/cache/semantic_index.h"

namespace tailcause::cache {

struct CacheOptions {
  std::size_t dim = 0;
  std::string name = "retrieval";  // the `cache` label of tailcause_cache_lookups_total
  std::string model_version = "v1";
  float threshold = 0.95f;         // cosine similarity of a semantic hit
  float quant_step = 1.0f / 1024;  // exact-key grid on the unit vector's components
  std::chrono::nanoseconds ttl = std::chrono::seconds(60);
  uint64_t base_quota_bytes = 4 << 20;  // per tenant unless set_base_quota says otherwise
  uint64_t budget_bytes = 0;            // all tenants' quotas together; 0: sum of the bases
  std::chrono::nanoseconds rebalance_period = std::chrono::seconds(5);
  std::size_t cold_min_lookups = 20;  // lookups in a window before its hit rate means anything
  bool semantic = true;               // off: exact keys only
  bool admission = true;              // off: plain LRU
  bool quotas = true;                 // off: every tenant keeps its base
  bool warmup = true;                 // off: maintain() never warms up
  IndexParams index;
  // Monotonic clock in ns (tests inject their own).
  std::function<int64_t()> clock;
};

enum class LookupResult : int { Hit = 0, Miss = 1, Stale = 2 };  // = enum tailcause_cache_result

struct Lookup {
  LookupResult result = LookupResult::Miss;
  bool semantic = false;             // found by similarity, not by its exact key
  float similarity = 0;              // of the entry found (1 for an exact hit)
  uint64_t age_ns = 0;               // staleness of the entry found
  uint64_t key = 0;                  // the query's exact key
  std::optional<std::string> value;  // only on a hit
};

enum class InsertResult : int { Stored = 0, Updated = 1, Rejected = 2 };

struct TenantStats {
  uint64_t base_quota_bytes = 0, quota_bytes = 0, usage_bytes = 0, entries = 0;
  double competition = 0;
  uint64_t hits = 0, semantic_hits = 0, misses = 0, stale = 0;
  uint64_t stored = 0, rejected = 0, evicted = 0, invalidated = 0;
  uint64_t warmups = 0, warmed_entries = 0, rebalances = 0;
  std::vector<MissedKeys::Item> most_missed;  // top 10
};

// Loads the values of `vectors` for warm-up (e.g. runs the retrieval for each); a nullopt
// skips that vector.
using WarmupLoader = std::function<std::vector<std::optional<std::string>>(
    const std::string& tenant, const std::vector<std::vector<float>>& vectors)>;

class VectorCache {
 public:
  explicit VectorCache(CacheOptions options);  // throws std::invalid_argument on bad options
  ~VectorCache();

  // Throw BadVector (nothing recorded) or std::invalid_argument (bad tenant name).
  Lookup lookup(const std::string& tenant, std::span<const float> vector, uint64_t request_id = 0);
  InsertResult insert(const std::string& tenant, std::span<const float> vector, std::string value);

  // A new model version: every entry of every tenant is dropped (counted as invalidated).
  void set_model_version(const std::string& version);
  std::string model_version() const;

  void set_base_quota(const std::string& tenant, uint64_t bytes);
  // Competition index in [0, 1]; std::invalid_argument otherwise. Applied at the next rebalance.
  void set_competition(const std::string& tenant, double competition);
  void set_loader(WarmupLoader loader);

  // One maintenance tick: if a rebalance period has passed, rebalances quotas, rolls the
  // pattern windows and warms up tenants that are cold or whose patterns rise. Returns true if
  // a period had passed. Call it from a timer, or start_maintenance().
  bool maintain();
  // Warms `tenant` now (seeds: restrict to those pattern keys; empty: the top patterns).
  // Returns the entries loaded.
  std::size_t warm_up(const std::string& tenant, const std::vector<uint64_t>& seeds = {});
  void rebalance();

  void start_maintenance();  // a thread calling maintain() every second
  void stop_maintenance();

  TenantStats stats(const std::string& tenant) const;
  std::vector<std::string> tenants() const;
  const CacheOptions& options() const { return options_; }
  LayoutReport layout() const { return vector_layout(options_.dim); }
  uint64_t entry_bytes(std::size_t value_bytes) const;

 private:
  struct Tenant;
  Tenant& tenant(const std::string& name);
  Tenant* find_tenant(const std::string& name) const;
  void evict_to_fit(Tenant& t, uint64_t quota);
  int64_t now() const { return options_.clock(); }

  CacheOptions options_;
  mutable std::shared_mutex tenants_mu_;
  std::unordered_map<std::string, std::unique_ptr<Tenant>> tenants_;
  mutable std::mutex version_mu_;
  std::string model_version_;
  std::atomic<uint64_t> version_epoch_{0};
  std::mutex loader_mu_;
  WarmupLoader loader_;
  std::mutex maintain_mu_;
  int64_t last_period_ns_;
  struct Maintenance;
  std::unique_ptr<Maintenance> maintenance_;
};

}  // namespace tailcause::cache
