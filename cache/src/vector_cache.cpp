// SPDX-License-Identifier: Apache-2.0
#include "tailcause/cache/vector_cache.h"

#include <algorithm>
#include <condition_variable>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include <absl/container/flat_hash_map.h>

#include "tailcause/cache/admission.h"
#include "tailcause/cache/exact_key.h"
#include "tailcause/cache/probes.h"
#include "tailcause/cache/quota.h"
#include "tailcause/cache/vector_check.h"
#include "tailcause/cache/warmup.h"

namespace tailcause::cache {
namespace {

constexpr std::size_t kMaxTenants = 4096;
constexpr std::size_t kMaxTenantName = 64;  // TAILCAUSE_MAX_TENANT: what the daemon reads
constexpr std::size_t kEntryOverhead = 96;  // map node, LRU node, bookkeeping

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check_tenant_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxTenantName)
    throw std::invalid_argument("tenant name must be 1.." + std::to_string(kMaxTenantName) +
                                " bytes");
}

// Older than the TTL: a lookup reports it stale and leaves its LRU place; admission lets any
// newcomer push it out.
template <typename Entry>
bool expired(const Entry& e, int64_t now, std::chrono::nanoseconds ttl) {
  return now - e.stored_ns > ttl.count();
}

}  // namespace

struct VectorCache::Tenant {
  Tenant(std::string n, std::size_t dim, const CacheOptions& o, std::string v)
      : name(std::move(n)),
        version(std::move(v)),
        base_quota(o.base_quota_bytes),
        quota(o.base_quota_bytes),
        index(dim, o.index) {}

  struct Entry {
    std::string value;
    int64_t stored_ns;
    uint64_t label;
    uint64_t bytes;
    std::list<uint64_t>::iterator lru;
  };

  const std::string name;
  mutable std::mutex mu;
  std::string version;
  uint64_t base_quota, quota, usage = 0, value_bytes = 0;
  double competition = 0;
  // Open addressing (Abseil): a lookup's one probe reads the entry itself, where a node-based
  // map reads a bucket and then a node. Entries move on a rehash; their LRU iterators point
  // into the list's nodes and stay valid.
  absl::flat_hash_map<uint64_t, Entry> entries;       // exact key -> entry
  absl::flat_hash_map<uint64_t, uint64_t> label_key;  // index label -> exact key
  std::list<uint64_t> lru;                            // exact keys, most recent first
  uint64_t next_label = 0;
  SemanticIndex index;
  FrequencySketch sketch;
  PatternLog patterns;
  MissedKeys missed;
  TenantStats counts;
  uint64_t window_lookups = 0, window_hits = 0;
  bool cold = true;  // since creation or the last invalidation, until warm or warmed up
};

struct VectorCache::Maintenance {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

VectorCache::VectorCache(CacheOptions options) : options_(std::move(options)) {
  if (options_.dim == 0 || options_.dim > 65536)
    throw std::invalid_argument("cache dimension must be 1..65536");
  if (!(options_.threshold > -1 && options_.threshold <= 1))
    throw std::invalid_argument("similarity threshold must be in (-1, 1]");
  if (!(options_.quant_step > 0 && options_.quant_step < 1))
    throw std::invalid_argument("quantisation step must be in (0, 1)");
  if (options_.ttl.count() <= 0) throw std::invalid_argument("TTL must be positive");
  if (options_.rebalance_period.count() <= 0)
    throw std::invalid_argument("rebalance period must be positive");
  if (options_.name.empty() || options_.name.size() > 32)
    throw std::invalid_argument("cache name must be 1..32 bytes");
  if (!options_.clock) options_.clock = steady_ns;
  model_version_ = options_.model_version;
  last_period_ns_ = now();
}

VectorCache::~VectorCache() { stop_maintenance(); }

uint64_t VectorCache::entry_bytes(std::size_t value_bytes) const {
  return value_bytes + kEntryOverhead +
         (options_.semantic ? SemanticIndex::bytes_per_element(options_.dim, options_.index) : 0);
}

VectorCache::Tenant* VectorCache::find_tenant(const std::string& name) const {
  std::shared_lock lock(tenants_mu_);
  auto it = tenants_.find(name);
  return it == tenants_.end() ? nullptr : it->second.get();
}

VectorCache::Tenant& VectorCache::tenant(const std::string& name) {
  if (auto* t = find_tenant(name)) return *t;
  check_tenant_name(name);
  std::unique_lock lock(tenants_mu_);
  auto& slot = tenants_[name];
  if (!slot) {
    if (tenants_.size() > kMaxTenants) {
      tenants_.erase(name);
      throw std::invalid_argument("too many tenants (at most " + std::to_string(kMaxTenants) + ")");
    }
    slot = std::make_unique<Tenant>(name, options_.dim, options_, model_version());
  }
  return *slot;
}

Lookup VectorCache::lookup(const std::string& tenant_name, std::span<const float> vector,
                           uint64_t request_id) {
  // A lookup stores nothing of its vector but a pattern's first copy: normalise it into this
  // thread's buffer rather than a fresh allocation each time.
  thread_local std::vector<float> unit;
  normalize_into(vector, options_.dim, unit);
  Tenant& t = tenant(tenant_name);
  Lookup out;
  {
    std::lock_guard lock(t.mu);
    out.key = exact_key(t.version, unit, options_.quant_step);
    t.sketch.record(out.key);
    t.patterns.record(out.key, unit);
    ++t.window_lookups;
    const int64_t at = now();
    auto it = t.entries.find(out.key);
    if (it != t.entries.end()) {
      out.similarity = 1;
    } else if (options_.semantic) {
      // The most similar fresh entry above the threshold; a stale one only when no fresh one
      // is: a stale neighbour must not hide a fresh one a little farther away.
      for (const auto& m : t.index.candidates(unit)) {
        if (m.similarity < options_.threshold) break;
        auto found = t.entries.find(t.label_key.at(m.label));
        const bool fresh = !expired(found->second, at, options_.ttl);
        if (it == t.entries.end() || fresh) {
          it = found;
          out.semantic = true;
          out.similarity = m.similarity;
        }
        if (fresh) break;
      }
    }
    if (it == t.entries.end()) {
      out.result = LookupResult::Miss;
      ++t.counts.misses;
      t.missed.record(out.key);
    } else {
      out.age_ns = static_cast<uint64_t>(std::max<int64_t>(0, at - it->second.stored_ns));
      if (expired(it->second, at, options_.ttl)) {
        // Not moved up the LRU order: an expired entry is only worth its refresh, which
        // stores it again (or a new entry) at the front.
        out.result = LookupResult::Stale;
        ++t.counts.stale;
      } else {
        t.lru.splice(t.lru.begin(), t.lru, it->second.lru);
        out.result = LookupResult::Hit;
        out.value = it->second.value;
        ++t.counts.hits;
        if (out.semantic) ++t.counts.semantic_hits;
        ++t.window_hits;
      }
    }
  }
  probe_lookup(request_id, options_.name.c_str(), static_cast<int64_t>(out.result), out.age_ns,
               out.key);
  return out;
}

void VectorCache::evict_to_fit(Tenant& t, uint64_t quota) {
  uint64_t n = 0;
  while (t.usage > quota && !t.lru.empty()) {
    const uint64_t victim = t.lru.back();
    auto it = t.entries.find(victim);
    t.usage -= it->second.bytes;
    t.value_bytes -= it->second.value.size();
    if (options_.semantic) t.index.remove(it->second.label);
    t.label_key.erase(it->second.label);
    t.lru.pop_back();
    t.entries.erase(it);
    ++n;
  }
  t.counts.evicted += n;
  if (n) probe_action(t.name.c_str(), options_.name.c_str(), CacheAction::Evict, n);
}

namespace {

// Inserts under the tenant's lock. `admit`: TinyLFU decides whether the candidate may push out
// the LRU victims; `evict`: false for warm-up, which only fills free memory.
template <typename T>
InsertResult insert_locked(T& t, const CacheOptions& o, uint64_t key,
                           const std::vector<float>& unit, std::string value, uint64_t bytes,
                           int64_t now, bool admit, bool evict, auto&& evict_to_fit) {
  if (auto it = t.entries.find(key); it != t.entries.end()) {
    auto& e = it->second;
    t.usage = t.usage - e.bytes + bytes;
    t.value_bytes = t.value_bytes - e.value.size() + value.size();
    e.value = std::move(value);
    e.bytes = bytes;
    e.stored_ns = now;
    t.lru.splice(t.lru.begin(), t.lru, e.lru);
    if (t.usage > t.quota) evict_to_fit(t, t.quota);
    return InsertResult::Updated;
  }
  if (bytes > t.quota) return InsertResult::Rejected;
  if (t.usage + bytes > t.quota) {
    if (!evict) return InsertResult::Rejected;
    // TinyLFU: the candidate must be more frequent than each victim it would push out, unless
    // the victim has expired (its popularity is no reason to keep an answer past its TTL).
    uint64_t freed = 0;
    for (auto v = t.lru.rbegin(); v != t.lru.rend() && t.usage - freed + bytes > t.quota; ++v) {
      const auto& victim = t.entries.at(*v);
      if (admit && !expired(victim, now, o.ttl) && !t.sketch.admit(key, *v))
        return InsertResult::Rejected;
      freed += victim.bytes;
    }
    evict_to_fit(t, t.quota - bytes);
  }
  const uint64_t label = t.next_label++;
  if (o.semantic) t.index.add(label, unit);
  t.label_key.emplace(label, key);
  t.lru.push_front(key);
  t.value_bytes += value.size();
  t.entries.emplace(key, typename T::Entry{std::move(value), now, label, bytes, t.lru.begin()});
  t.usage += bytes;
  ++t.counts.stored;
  return InsertResult::Stored;
}

}  // namespace

InsertResult VectorCache::insert(const std::string& tenant_name, std::span<const float> vector,
                                 std::string value) {
  const auto unit = normalized_or_throw(vector, options_.dim);
  Tenant& t = tenant(tenant_name);
  InsertResult r;
  {
    std::lock_guard lock(t.mu);
    const uint64_t key = exact_key(t.version, unit, options_.quant_step);
    const uint64_t bytes = entry_bytes(value.size());
    r = insert_locked(t, options_, key, unit, std::move(value), bytes, now(), options_.admission,
                      true, [this](Tenant& x, uint64_t q) { evict_to_fit(x, q); });
    if (r == InsertResult::Rejected) ++t.counts.rejected;
  }
  if (r == InsertResult::Rejected)
    probe_action(tenant_name.c_str(), options_.name.c_str(), CacheAction::Reject, 1);
  return r;
}

std::string VectorCache::model_version() const {
  std::lock_guard lock(version_mu_);
  return model_version_;
}

void VectorCache::set_model_version(const std::string& version) {
  if (version.empty() || version.size() > 256)
    throw std::invalid_argument("model version must be 1..256 bytes");
  {
    std::lock_guard lock(version_mu_);
    if (version == model_version_) return;
    model_version_ = version;
  }
  std::shared_lock lock(tenants_mu_);
  for (auto& [name, tp] : tenants_) {
    Tenant& t = *tp;
    uint64_t n;
    {
      std::lock_guard tl(t.mu);
      t.version = version;
      n = t.entries.size();
      t.entries.clear();
      t.label_key.clear();
      t.lru.clear();
      t.index.clear();
      // The recorded query vectors belong to the old model's embedding space.
      t.patterns.clear();
      t.usage = t.value_bytes = 0;
      t.counts.invalidated += n;
      t.cold = true;
    }
    probe_action(name.c_str(), options_.name.c_str(), CacheAction::Invalidate, n);
  }
}

void VectorCache::set_base_quota(const std::string& tenant_name, uint64_t bytes) {
  Tenant& t = tenant(tenant_name);
  std::lock_guard lock(t.mu);
  t.base_quota = bytes;
  if (!options_.quotas || t.quota > bytes * kQuotaCeiling) {
    t.quota = bytes;
    evict_to_fit(t, t.quota);
  }
}

void VectorCache::set_competition(const std::string& tenant_name, double competition) {
  if (!(competition >= 0 && competition <= 1))
    throw std::invalid_argument("competition index must be in [0, 1]");
  Tenant& t = tenant(tenant_name);
  std::lock_guard lock(t.mu);
  t.competition = competition;
}

void VectorCache::set_loader(WarmupLoader loader) {
  std::lock_guard lock(loader_mu_);
  loader_ = std::move(loader);
}

void VectorCache::rebalance() {
  std::vector<Tenant*> all;
  {
    std::shared_lock lock(tenants_mu_);
    for (auto& [n, t] : tenants_) all.push_back(t.get());
  }
  std::vector<QuotaInput> in;
  uint64_t base_sum = 0;
  for (Tenant* t : all) {
    std::lock_guard lock(t->mu);
    in.push_back({t->base_quota, t->competition});
    base_sum += t->base_quota;
  }
  const auto quotas = balance_quotas(in, options_.budget_bytes ? options_.budget_bytes : base_sum);
  for (std::size_t i = 0; i < all.size(); ++i) {
    Tenant& t = *all[i];
    uint64_t q;
    {
      std::lock_guard lock(t.mu);
      t.quota = options_.quotas ? quotas[i] : t.base_quota;
      q = t.quota;
      evict_to_fit(t, t.quota);
      ++t.counts.rebalances;
    }
    probe_action(t.name.c_str(), options_.name.c_str(), CacheAction::Rebalance, q);
  }
}

std::size_t VectorCache::warm_up(const std::string& tenant_name,
                                 const std::vector<uint64_t>& seeds) {
  WarmupLoader loader;
  {
    std::lock_guard lock(loader_mu_);
    loader = loader_;
  }
  if (!loader) return 0;
  Tenant& t = tenant(tenant_name);
  std::vector<std::vector<float>> todo;
  {
    std::lock_guard lock(t.mu);
    const auto& all = t.patterns.patterns();
    std::unordered_set<uint64_t> keys;
    auto want = [&](const std::vector<float>& v) {
      const uint64_t k = exact_key(t.version, v, options_.quant_step);
      if (t.entries.contains(k) || !keys.insert(k).second) return;
      todo.push_back(v);
    };
    for (const auto& g : plan_warmup(t.patterns, seeds)) {
      want(g.centre);
      for (uint64_t k : g.neighbours) want(all.at(k).vector);
    }
  }
  std::size_t loaded = 0, next = 0;
  while (next < todo.size()) {
    std::size_t batch;
    {
      std::lock_guard lock(t.mu);
      const uint64_t avg = t.entries.empty() ? 256 : t.value_bytes / t.entries.size();
      batch = warmup_batch_size(t.quota > t.usage ? t.quota - t.usage : 0, entry_bytes(avg));
    }
    if (batch == 0) break;
    std::vector<std::vector<float>> vectors(todo.begin() + next,
                                            todo.begin() + std::min(todo.size(), next + batch));
    next += vectors.size();
    auto values = loader(tenant_name, vectors);
    std::size_t n = 0;
    {
      std::lock_guard lock(t.mu);
      for (std::size_t i = 0; i < vectors.size() && i < values.size(); ++i) {
        if (!values[i]) continue;
        const uint64_t key = exact_key(t.version, vectors[i], options_.quant_step);
        const uint64_t bytes = entry_bytes(values[i]->size());
        if (insert_locked(t, options_, key, vectors[i], std::move(*values[i]), bytes, now(), false,
                          false, [this](Tenant& x, uint64_t q) { evict_to_fit(x, q); }) ==
            InsertResult::Stored)
          ++n;
      }
      t.counts.warmed_entries += n;
      ++t.counts.warmups;
    }
    loaded += n;
    probe_action(tenant_name.c_str(), options_.name.c_str(), CacheAction::WarmUp, n);
    if (n == 0) break;
  }
  return loaded;
}

bool VectorCache::maintain() {
  std::lock_guard guard(maintain_mu_);
  const int64_t t_now = now();
  if (t_now - last_period_ns_ < options_.rebalance_period.count()) return false;
  last_period_ns_ = t_now;
  rebalance();
  std::vector<std::pair<std::string, std::vector<uint64_t>>> warm;  // tenant, seeds
  {
    std::shared_lock lock(tenants_mu_);
    for (auto& [name, tp] : tenants_) {
      Tenant& t = *tp;
      std::lock_guard tl(t.mu);
      auto rising = t.patterns.roll_window();
      const bool enough = t.window_lookups >= options_.cold_min_lookups;
      const double rate = t.window_lookups ? double(t.window_hits) / t.window_lookups : 0;
      t.window_lookups = t.window_hits = 0;
      if (enough && rate >= kColdHitRate) t.cold = false;
      if (!options_.warmup) continue;
      if (t.cold && enough && rate < kColdHitRate) {
        t.cold = false;  // one cold-start warm-up; rises trigger the next ones
        warm.push_back({name, {}});
      } else if (!rising.empty()) {
        warm.push_back({name, std::move(rising)});
      }
    }
  }
  for (auto& [name, seeds] : warm) warm_up(name, seeds);
  return true;
}

void VectorCache::start_maintenance() {
  if (maintenance_) return;
  maintenance_ = std::make_unique<Maintenance>();
  maintenance_->thread = std::thread([this] {
    std::unique_lock lock(maintenance_->mu);
    while (!maintenance_->cv.wait_for(lock, std::chrono::seconds(1),
                                      [this] { return maintenance_->stop; })) {
      lock.unlock();
      maintain();
      lock.lock();
    }
  });
}

void VectorCache::stop_maintenance() {
  if (!maintenance_) return;
  {
    std::lock_guard lock(maintenance_->mu);
    maintenance_->stop = true;
  }
  maintenance_->cv.notify_all();
  maintenance_->thread.join();
  maintenance_.reset();
}

TenantStats VectorCache::stats(const std::string& tenant_name) const {
  Tenant* t = find_tenant(tenant_name);
  if (!t) throw std::invalid_argument("unknown tenant '" + tenant_name + "'");
  std::lock_guard lock(t->mu);
  TenantStats s = t->counts;
  s.base_quota_bytes = t->base_quota;
  s.quota_bytes = t->quota;
  s.usage_bytes = t->usage;
  s.entries = t->entries.size();
  s.competition = t->competition;
  s.most_missed = t->missed.top(10);
  return s;
}

std::vector<std::string> VectorCache::tenants() const {
  std::shared_lock lock(tenants_mu_);
  std::vector<std::string> out;
  for (const auto& [n, t] : tenants_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tailcause::cache
