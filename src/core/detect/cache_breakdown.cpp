// SPDX-License-Identifier: Apache-2.0
#include "core/detect/cache_breakdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <tuple>
#include <stdexcept>

#include "core/aggregate/bounded_map.h"
#include "core/detect/verdict.h"

namespace tailcause::core {

namespace {
constexpr int kHit = 0, kMiss = 1, kStale = 2;
constexpr uint64_t kNsPerSecond = 1'000'000'000;

long percent(uint64_t part, uint64_t whole) {
  return whole ? std::lround(100.0 * static_cast<double>(part) / static_cast<double>(whole)) : 0;
}
}  // namespace

double CacheBreakdownDetector::Counts::ratio() const {
  const uint64_t n = lookups();
  return n ? static_cast<double>(misses + stales) / static_cast<double>(n) : 0;
}

CacheBreakdownDetector::CacheBreakdownDetector(const CacheBreakdownSettings& settings,
                                               size_t max_series)
    : settings_(settings),
      max_series_(max_series),
      interval_ns_(settings.window_s * kNsPerSecond / kIntervals) {
  if (settings.window_s == 0) throw std::invalid_argument("cache breakdown: window_s must be > 0");
  if (!(settings.ratio > 0 && settings.ratio <= 1)) {
    throw std::invalid_argument("cache breakdown: ratio must be in (0, 1]");
  }
}

CacheBreakdownDetector::Series* CacheBreakdownDetector::series_for(const std::string& tenant,
                                                                   const std::string& cache) {
  return bounded_slot(series_, {tenant, cache}, max_series_, untracked_, [] { return Series{}; });
}

bool CacheBreakdownDetector::live(const Bucket& b, uint64_t now_ns) const {
  // A bucket from the future (records slightly out of order) counts as live.
  return b.epoch != 0 && b.epoch + kIntervals > now_ns / interval_ns_ + 1;
}

CacheBreakdownDetector::Counts CacheBreakdownDetector::counts(const Series& s,
                                                              uint64_t now_ns) const {
  Counts c;
  for (const Bucket& b : s.buckets) {
    if (!live(b, now_ns)) continue;
    c.hits += b.hits;
    c.misses += b.misses;
    c.stales += b.stales;
  }
  return c;
}

std::string CacheBreakdownDetector::evidence(const std::string& cache, const Counts& c,
                                             const Series& s, uint64_t now_ns) const {
  std::string text = fmt::format(
      "cache {}: {}% of {} lookups missed or stale in {} s (miss {}%, stale {}%", cache,
      percent(c.misses + c.stales, c.lookups()), format_count(c.lookups()), settings_.window_s,
      percent(c.misses, c.lookups()), percent(c.stales, c.lookups()));
  if (c.stales > 0 && s.stale_ages) {
    text += fmt::format("; stale age P95 {}, P99 {}",
                        format_duration(s.stale_ages->quantile(now_ns, 0.95)),
                        format_duration(s.stale_ages->quantile(now_ns, 0.99)));
  }
  return text + ")";
}

std::optional<Glitch> CacheBreakdownDetector::observe(const CacheRecord& r) {
  if (r.result < kHit || r.result > kStale) return std::nullopt;  // the kernel refuses these
  const uint64_t now = r.time_ns;
  if (now > latest_ns_) latest_ns_ = now;
  Series* s = series_for(r.id.tenant, r.cache);
  if (s == nullptr) return std::nullopt;
  if (s->first_ns == 0) s->first_ns = now ? now : 1;
  s->pid = r.id.pid;

  // A breakdown whose window emptied (no lookups for a whole window) is over.
  if (s->in_breakdown && counts(*s, now).lookups() == 0) s->in_breakdown = false;

  const uint64_t epoch = now / interval_ns_ + 1;
  Bucket& b = s->buckets[epoch % kIntervals];
  if (b.epoch > epoch) return std::nullopt;  // a window older than what the ring holds
  if (b.epoch != epoch) b = Bucket{epoch};
  if (r.result == kHit) b.hits++;
  if (r.result == kMiss) b.misses++;
  if (r.result == kStale) {
    b.stales++;
    if (!s->stale_ages)
      s->stale_ages = std::make_unique<StreamingQuantile>(interval_ns_, kIntervals);
    s->stale_ages->add(now, r.age_ns);
  }

  const Counts c = counts(*s, now);
  if (s->in_breakdown) {
    if (c.ratio() < settings_.ratio * kExitFactor) s->in_breakdown = false;
    return std::nullopt;
  }
  if (c.lookups() < settings_.min_lookups || c.ratio() < settings_.ratio) return std::nullopt;
  // An empty cache misses until it has filled: judge only once warmup_s have passed since
  // the first lookup, so start-up is not reported as a breakdown.
  if (now - s->first_ns < static_cast<uint64_t>(settings_.warmup_s) * 1'000'000'000ULL) {
    return std::nullopt;
  }
  s->in_breakdown = true;
  s->breakdowns++;

  Glitch g;
  g.tenant = r.id.tenant;
  g.agent = r.id.agent;
  g.stage = "cache:" + r.cache;
  g.trace_id = r.id.trace_id;
  g.pid = r.id.pid;
  g.request_id = r.id.request_id;
  g.start_ns = now > window_ns() ? now - window_ns() : 0;
  g.end_ns = now;
  g.cause = "cache_breakdown";
  g.verdict.evidence = evidence(r.cache, c, *s, now);
  return g;
}

CacheBreakdownStatus CacheBreakdownDetector::status_of(const std::string& tenant,
                                                       const std::string& cache, const Series& s,
                                                       uint64_t now_ns) const {
  const Counts c = counts(s, now_ns);
  CacheBreakdownStatus st;
  st.tenant = tenant;
  st.cache = cache;
  st.lookups = c.lookups();
  st.hits = c.hits;
  st.misses = c.misses;
  st.stales = c.stales;
  st.ratio = c.ratio();
  st.in_breakdown = s.in_breakdown && c.lookups() > 0;
  if (s.stale_ages && c.stales > 0) {
    st.stale_age_p95_ns = s.stale_ages->quantile(now_ns, 0.95);
    st.stale_age_p99_ns = s.stale_ages->quantile(now_ns, 0.99);
  }
  st.breakdowns = s.breakdowns;
  st.pid = s.pid;
  return st;
}

namespace {
// Fills in the competition index of a group of statuses that share one cache (name and
// process): 0 for all when
// fewer than two tenants used it in the window (nobody to compete with).
void set_competition(std::span<CacheBreakdownStatus> same_cache) {
  uint64_t churn = 0;
  size_t active = 0;
  for (const auto& st : same_cache) {
    churn += st.misses + st.stales;
    active += st.lookups > 0;
  }
  for (auto& st : same_cache) {
    st.competition = churn == 0 || active < 2 ? 0
                                              : static_cast<double>(st.misses + st.stales) /
                                                    static_cast<double>(churn) * st.ratio;
  }
}
}  // namespace

std::vector<CacheBreakdownStatus> CacheBreakdownDetector::snapshot(uint64_t now_ns) const {
  std::vector<CacheBreakdownStatus> out;
  out.reserve(series_.size());
  for (const auto& [key, s] : series_) out.push_back(status_of(key.first, key.second, s, now_ns));
  // Grouped by cache and process for the competition index (the map is ordered by tenant).
  const auto same = [](const auto& a, const auto& b) {
    return a.cache == b.cache && a.pid == b.pid;
  };
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.cache, a.pid) < std::tie(b.cache, b.pid);
  });
  for (size_t i = 0; i < out.size();) {
    size_t j = i;
    while (j < out.size() && same(out[j], out[i])) j++;
    set_competition(std::span(out).subspan(i, j - i));
    i = j;
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.tenant, a.cache) < std::tie(b.tenant, b.cache);
  });
  return out;
}

CacheBreakdownStatus CacheBreakdownDetector::status(const std::string& tenant,
                                                    const std::string& cache,
                                                    uint64_t now_ns) const {
  const auto it = series_.find({tenant, cache});
  if (it == series_.end()) {
    CacheBreakdownStatus unseen;
    unseen.tenant = tenant;
    unseen.cache = cache;
    return unseen;
  }
  std::vector<CacheBreakdownStatus> same_cache;
  std::optional<size_t> self;
  for (const auto& [key, s] : series_) {
    if (key.second != cache || s.pid != it->second.pid) continue;
    if (key.first == tenant) self = same_cache.size();
    same_cache.push_back(status_of(key.first, key.second, s, now_ns));
  }
  set_competition(same_cache);
  return same_cache[*self];
}

}  // namespace tailcause::core
