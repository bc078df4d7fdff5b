// SPDX-License-Identifier: Apache-2.0
#include "core/report/diagnosis.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "core/record/schema.h"

namespace tailcause::core {
namespace {

// A family's samples by label set. A label set seen twice in one scrape keeps its first sample.
std::map<Labels, const Sample*> samples_of(const MetricSet& set, const std::string& name) {
  std::map<Labels, const Sample*> out;
  for (const auto& f : set.families()) {
    if (f.name != name) continue;
    for (const auto& s : f.samples) {
      Labels key = s.labels;
      std::sort(key.begin(), key.end());
      out.emplace(std::move(key), &s);
    }
  }
  return out;
}

bool has_family(const MetricSet& set, const std::string& name) {
  return std::any_of(set.families().begin(), set.families().end(),
                     [&](const MetricFamily& f) { return f.name == name; });
}

std::string label(const Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels)
    if (k == name) return v;
  return "";
}

// Counter growth per label set between two scrapes. A series missing from `before` grew from
// zero; one that went backwards restarted (its family was restarted), so all of it is new.
std::map<Labels, double> counter_delta(const MetricSet& before, const MetricSet& after,
                                       const std::string& name) {
  const auto old = samples_of(before, name);
  std::map<Labels, double> out;
  for (const auto& [key, s] : samples_of(after, name)) {
    auto it = old.find(key);
    const double prev = it == old.end() ? 0.0 : it->second->value;
    out[key] = s->value >= prev ? s->value - prev : s->value;
  }
  return out;
}

struct HistogramDelta {
  uint64_t count = 0;
  double sum = 0;
  std::optional<double> mean() const {
    return count ? std::optional<double>(sum / static_cast<double>(count)) : std::nullopt;
  }
};

std::map<Labels, HistogramDelta> histogram_delta(const MetricSet& before, const MetricSet& after,
                                                 const std::string& name) {
  const auto old = samples_of(before, name);
  std::map<Labels, HistogramDelta> out;
  for (const auto& [key, s] : samples_of(after, name)) {
    HistogramDelta d{s->histogram.count, s->histogram.sum};
    auto it = old.find(key);
    if (it != old.end() && it->second->histogram.count <= d.count) {
      d.count -= it->second->histogram.count;
      d.sum = std::max(0.0, d.sum - it->second->histogram.sum);
    }
    out[key] = d;
  }
  return out;
}

std::vector<ThrottledCgroup> throttled_cgroups(const MetricSet& before, const MetricSet& after) {
  const auto seconds = counter_delta(before, after, metric::kCpuThrottledSeconds);
  const auto throttled = counter_delta(before, after, metric::kCpuThrottledPeriods);
  const auto periods = counter_delta(before, after, metric::kCpuPeriods);
  const auto quota = samples_of(after, metric::kCpuQuotaSeconds);
  const auto period = samples_of(after, metric::kCpuPeriodSeconds);
  std::vector<ThrottledCgroup> out;
  auto get = [](const std::map<Labels, double>& m, const Labels& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  std::map<Labels, bool> keys;
  for (const auto& [k, _] : seconds) keys[k] = true;
  for (const auto& [k, _] : throttled) keys[k] = true;
  for (const auto& [k, _] : keys) {
    ThrottledCgroup t;
    t.cgroup = label(k, "cgroup");
    t.throttled_seconds = get(seconds, k);
    t.throttled_periods = static_cast<uint64_t>(get(throttled, k) + 0.5);
    t.periods = static_cast<uint64_t>(get(periods, k) + 0.5);
    if (t.throttled_seconds <= 0 && t.throttled_periods == 0) continue;
    auto q = quota.find(k);
    auto p = period.find(k);
    if (q != quota.end() && p != period.end() && p->second->value > 0)
      t.quota_cpus = q->second->value / p->second->value;
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.throttled_seconds, a.throttled_periods) >
           std::tie(b.throttled_seconds, b.throttled_periods);
  });
  return out;
}

std::vector<NoisyNeighbour> noisy_neighbours(const MetricSet& before, const MetricSet& after) {
  const auto seconds = counter_delta(before, after, metric::kCgroupPreemptedSeconds);
  const auto count = counter_delta(before, after, metric::kCgroupPreemptions);
  std::vector<NoisyNeighbour> out;
  for (const auto& [k, s] : seconds) {
    NoisyNeighbour n;
    n.cgroup = label(k, "cgroup");
    n.by_cgroup = label(k, "by_cgroup");
    // A cgroup's own threads taking turns are not neighbours.
    if (n.cgroup == n.by_cgroup || s <= 0) continue;
    n.preempted_seconds = s;
    auto c = count.find(k);
    n.preemptions = c == count.end() ? 0 : static_cast<uint64_t>(c->second + 0.5);
    out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.preempted_seconds > b.preempted_seconds; });
  return out;
}

std::vector<TcpPeer> tcp_peers(const MetricSet& before, const MetricSet& after) {
  const auto durations = histogram_delta(before, after, metric::kTcpConnectionDurationSeconds);
  const auto rtts = histogram_delta(before, after, metric::kTcpRttSeconds);
  std::map<Labels, TcpPeer> by_pair;
  for (const auto& [k, d] : durations) {
    if (!d.count) continue;
    TcpPeer& p = by_pair[k];
    p.connections = d.count;
    p.mean_connection_seconds = d.mean();
  }
  for (const auto& [k, d] : rtts) {
    if (!d.count) continue;
    TcpPeer& p = by_pair[k];
    p.rtt_samples = d.count;
    p.mean_rtt_seconds = d.mean();
  }
  std::vector<TcpPeer> out;
  for (auto& [k, p] : by_pair) {
    p.local = label(k, "local");
    p.remote = label(k, "remote");
    out.push_back(std::move(p));
  }
  // Slowest connections first; pairs with only RTT samples after them, by RTT.
  std::sort(out.begin(), out.end(), [](const TcpPeer& a, const TcpPeer& b) {
    const double da = a.mean_connection_seconds.value_or(-1),
                 db = b.mean_connection_seconds.value_or(-1);
    if (da != db) return da > db;
    return a.mean_rtt_seconds.value_or(-1) > b.mean_rtt_seconds.value_or(-1);
  });
  return out;
}

// From the glitch counter when the scrapes carry it, else from the top glitches.
std::vector<CauseCount> cause_counts(const AnalyzerSummary& summary, const MetricSet& before,
                                     const MetricSet& after) {
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts;
  if (has_family(after, metric::kGlitches)) {
    for (const auto& [k, v] : counter_delta(before, after, metric::kGlitches)) {
      const auto n = static_cast<uint64_t>(v + 0.5);
      if (n) counts[{label(k, "tenant"), label(k, "stage"), label(k, "cause")}] += n;
    }
  } else {
    for (const auto& g : summary.top_glitches) counts[{g.tenant, g.stage, g.cause}]++;
  }
  std::vector<CauseCount> out;
  for (const auto& [k, n] : counts) {
    out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), n});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

bool is_request(const std::string& stage) { return stage == GlitchDetector::kRequestStage; }

// "generation 1.42 s, 63% cpu_throttled: cgroup /a throttled ..." has detail after the shares;
// a slow request's evidence repeats its stage's after "request 1.6 s: ".
bool has_detail(const Glitch& g) {
  const std::string& e = g.verdict.evidence;
  size_t at = e.find(": ");
  if (at != std::string::npos && is_request(g.stage)) at = e.find(": ", at + 2);
  return at != std::string::npos;
}

std::vector<TenantVerdict> tenant_verdicts(const std::vector<CauseCount>& causes,
                                           const std::vector<Glitch>& top) {
  std::map<std::string, TenantVerdict> by_tenant;
  for (const auto& c : causes) {  // most first: the first one seen per tenant leads
    if (is_request(c.stage)) continue;
    TenantVerdict& v = by_tenant[c.tenant];
    v.tenant_glitches += c.count;
    if (v.tenant.empty())
      v.tenant = c.tenant, v.stage = c.stage, v.cause = c.cause, v.count = c.count;
  }
  // Tenants whose requests were slow while no stage stood out.
  for (const auto& c : causes) {
    if (!is_request(c.stage) || by_tenant.count(c.tenant)) continue;
    by_tenant[c.tenant] = TenantVerdict{c.tenant, c.stage, c.cause, c.count, 0, std::nullopt};
  }
  std::vector<TenantVerdict> out;
  for (auto& [tenant, v] : by_tenant) {
    // The slowest glitch of this stage and cause, else a slow request explained by one; in
    // each, one whose evidence names more than shares (a cgroup, a peer, page-cache misses)
    // first. The first glitches may predate the evidence the other families gather.
    for (bool exact : {true, false}) {
      for (bool detailed : {true, false}) {
        for (const auto& g : top) {
          if (v.example) break;
          if (g.tenant != tenant || g.cause != v.cause) continue;
          if (exact ? g.stage != v.stage : !is_request(g.stage)) continue;
          if (!detailed || has_detail(g)) v.example = g;
        }
      }
    }
    out.push_back(std::move(v));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.tenant_glitches, a.count) > std::tie(b.tenant_glitches, b.count);
  });
  return out;
}

// One row per tenant, by name: its requests, rate, cache breakdown and embedding P99.
std::vector<TenantReport> tenant_reports(const AnalyzerSummary& summary, double duration_seconds) {
  std::vector<TenantReport> out;
  for (const auto& t : summary.tenants) {
    TenantReport r;
    r.tenant = t.tenant;
    r.requests = t.requests;
    r.errors = t.errors;
    r.glitches = t.glitches;
    r.qps = duration_seconds > 0 ? static_cast<double>(t.requests) / duration_seconds : 0;
    r.cache_lookups = t.cache_lookups;
    r.cache_breakdown_rate = t.cache_lookups
                                 ? static_cast<double>(t.cache_misses + t.cache_stales) /
                                       static_cast<double>(t.cache_lookups)
                                 : 0;
    for (const auto& s : summary.stages)
      if (s.tenant == t.tenant && s.stage == "embedding" && s.count > 0)
        r.embedding_p99_ns = s.p99_ns;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.tenant < b.tenant; });
  return out;
}

// One row per tenant and stage, with the component that took most of its time.
std::vector<StageReport> stage_reports(const AnalyzerSummary& summary) {
  std::vector<StageReport> out;
  for (const auto& s : summary.stages) {
    StageReport r;
    r.summary = s;
    uint64_t total = 0, best = 0;
    for (size_t c = 0; c < kComponents; ++c) {
      total += s.component_ns[c];
      if (s.component_ns[c] > best) best = s.component_ns[c], r.leading = static_cast<Component>(c);
    }
    if (total) r.leading_share = static_cast<double>(best) / static_cast<double>(total);
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.summary.tenant, a.summary.stage) <
           std::tie(b.summary.tenant, b.summary.stage);
  });
  return out;
}

}  // namespace

Diagnosis build_diagnosis(const AnalyzerSummary& summary, const MetricSet& before,
                          const MetricSet& after, double duration_seconds,
                          const DiagnosisOptions& options) {
  Diagnosis d;
  d.options = options;
  d.duration_seconds = duration_seconds;
  d.glitches = summary.glitches;
  d.breaker_trips = summary.breaker_trips;
  d.tenants = tenant_reports(summary, duration_seconds);
  for (const auto& t : d.tenants) d.requests += t.requests;
  d.stages = stage_reports(summary);

  // Stage glitches carry the component evidence; slow requests repeat their worst stage's.
  d.top_glitches = summary.top_glitches;
  std::stable_sort(d.top_glitches.begin(), d.top_glitches.end(),
                   [](const Glitch& a, const Glitch& b) {
                     if (is_request(a.stage) != is_request(b.stage)) return !is_request(a.stage);
                     return a.check.wall_ns > b.check.wall_ns;
                   });

  d.causes = cause_counts(summary, before, after);
  d.verdicts = tenant_verdicts(d.causes, summary.top_glitches);
  d.caches = summary.caches;
  d.cache_loop = summary.cache_loop;
  d.throttled = throttled_cgroups(before, after);
  d.neighbours = noisy_neighbours(before, after);
  d.peers = tcp_peers(before, after);
  d.incidents = summary.incidents;
  return d;
}

}  // namespace tailcause::core
