// SPDX-License-Identifier: Apache-2.0
#include "export/api/api.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "core/host/clock.h"
#include "core/record/schema.h"
#include "export/api/endpoints.h"
#include "export/glitch_listing.h"
#include "export/journal.h"

namespace tailcause::exporter::api {
namespace {

constexpr int64_t kMaxGlitchSinceS = 7 * 24 * 3600;  // the journal's default max_age
constexpr int kMaxGlitchLimit = 500;
constexpr int kGlitchScan = 5000;    // rows read when filtering by what SQL does not
constexpr size_t kKeptAnswers = 64;  // distinct views kept until the next sample

nlohmann::json index_json(const ApiSettings& s) {
  return {
      {"version", 1},
      {"tick_s", static_cast<int64_t>(s.tick_ns) / kSecondNs},
      {"history_s", static_cast<int64_t>(s.tick_ns) / kSecondNs * static_cast<int64_t>(s.slots)},
      {"endpoints",
       {{"/api/v1/stages", "tenant, stage, since (s), step (s): P50/P99, components, glitches"},
        {"/api/v1/heatmap/stage",
         "stage (required), tenant, since, step: end second x latency bucket"},
        {"/api/v1/heatmap/tcp", "metric (rtt|duration), hours, local, remote: pair x hour P99"},
        {"/api/v1/heatmap/layers", "since: layer x batch size P99"},
        {"/api/v1/glitches",
         "tenant, stage, since (s), from, to (Unix s), min_s, max_s, trace_id, limit: newest "
         "first"},
        {"/api/v1/caches",
         "tenant, since: hit/miss/stale, breakdown, stale-age P95/P99, competition, quota"},
        {"/api/v1/contention", "since: throttling, noisy neighbours, breakers"}}}};
}

}  // namespace

core::HistorySettings history_settings(uint64_t tick_ns, size_t slots) {
  namespace m = core::metric;
  core::HistorySettings s;
  s.step_ns = tick_ns;
  s.slots = slots;
  s.families = {m::kStageDurationSeconds,   m::kStageTimeSeconds,    m::kGlitches,
                m::kLayerDurationSeconds,   m::kCacheLookups,        m::kCacheBreakdowns,
                m::kCpuThrottledSeconds,    m::kCpuThrottledPeriods, m::kCpuPeriods,
                m::kCgroupPreemptedSeconds, m::kCgroupPreemptions,   m::kSeriesFolded};
  s.hourly_families = {m::kTcpRttSeconds, m::kTcpConnectionDurationSeconds};
  s.gauge_families = {m::kCircuitBreakerOpen,   m::kCacheBreakdownRatio,
                      m::kCacheStaleAgeSeconds, m::kCacheCompetition,
                      m::kCacheQuotaBytes,      m::kCpuQuotaSeconds,
                      m::kCpuPeriodSeconds,     m::kSeries,
                      m::kSeriesLimit};
  return s;
}

Api::Api(Collect collect, ApiSettings settings)
    : collect_(std::move(collect)),
      settings_(settings),
      history_(history_settings(settings.tick_ns, settings.slots)) {}

Api::~Api() { stop(); }

void Api::configure(ApiSettings settings) {
  std::lock_guard lock(mu_);
  settings_ = std::move(settings);
  history_ = core::MetricHistory(history_settings(settings_.tick_ns, settings_.slots));
  answers_.clear();
  journal_.reset();
}

void Api::set_stage_heatmap(std::shared_ptr<const core::StageHeatmap> heatmap) {
  std::lock_guard lock(mu_);
  stage_heatmap_ = std::move(heatmap);
}

void Api::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      open_journal();
      sample(core::realtime_ns());
      lock.lock();
      wake_.wait_for(lock, std::chrono::nanoseconds(settings_.tick_ns),
                     [this] { return stopping_; });
    }
  });
}

void Api::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// On the sampler thread: opening checks the file (quick_check), which the HTTP thread must not
// wait for. Retried every tick until it opens.
void Api::open_journal() {
  std::string path;
  {
    std::lock_guard lock(mu_);
    if (journal_ || settings_.journal_path.empty()) return;
    path = settings_.journal_path;
  }
  try {
    auto journal = std::make_unique<Journal>(path, JournalLimits{});
    std::lock_guard lock(mu_);
    journal_ = std::move(journal);
  } catch (const std::exception& e) {
    spdlog::debug("api: journal {} not open yet: {}", path, e.what());
  }
}

void Api::sample(int64_t unix_ns) {
  core::MetricSet scrape;
  collect_(scrape);  // outside the lock: requests are answered meanwhile
  sample(scrape, unix_ns);
}

void Api::sample(const core::MetricSet& scrape, int64_t unix_ns) {
  std::lock_guard lock(mu_);
  history_.add(scrape, unix_ns);
  answers_.clear();
}

Reply Api::handle(std::string_view path, std::string_view query, int64_t now_ns) const {
  std::lock_guard lock(mu_);
  // The glitch list (the journal) and the stage heatmap (the pipeline's) are read live.
  if (path == "/glitches" || path == "/heatmap/stage") return answer(path, query, now_ns);
  // Within one tick the history and the window's slots are the same.
  const std::string key =
      fmt::format("{}?{}@{}", path, query,
                  now_ns / std::max<int64_t>(static_cast<int64_t>(settings_.tick_ns), 1));
  if (const auto it = answers_.find(key); it != answers_.end()) return it->second;
  Reply reply = answer(path, query, now_ns);
  if (answers_.size() >= kKeptAnswers) answers_.clear();
  answers_.emplace(key, reply);
  return reply;
}

// Under mu_.
Reply Api::answer(std::string_view path, std::string_view query, int64_t now_ns) const {
  try {
    const auto& h = history_;
    if (path == "" || path == "/") return json_reply(index_json(settings_));
    if (path == "/stages")
      return json_reply(
          stages_json(h, Params::parse(query, {"tenant", "stage", "since", "step"}), now_ns));
    if (path == "/heatmap/stage") {
      if (!stage_heatmap_) return error_reply(503, "no stage heatmap in this process");
      return json_reply(stage_heatmap_json(
          *stage_heatmap_, Params::parse(query, {"tenant", "stage", "since", "step"}), now_ns));
    }
    if (path == "/heatmap/tcp")
      return json_reply(
          tcp_heatmap_json(h, Params::parse(query, {"metric", "hours", "local", "remote"})));
    if (path == "/heatmap/layers")
      return json_reply(layer_heatmap_json(h, Params::parse(query, {"since"}), now_ns));
    if (path == "/caches") {
      return json_reply(caches_json(h, Params::parse(query, {"tenant", "since"}), now_ns,
                                    settings_.cache_breakdown_ratio));
    }
    if (path == "/contention")
      return json_reply(contention_json(h, Params::parse(query, {"since"}), now_ns));
    if (path == "/glitches") {
      return glitches(Params::parse(query, {"tenant", "stage", "since", "from", "to", "min_s",
                                            "max_s", "trace_id", "limit"}),
                      now_ns);
    }
    return error_reply(404, "no such endpoint (GET /api/v1/ lists them)");
  } catch (const BadRequest& e) {
    return error_reply(400, e.what());
  }
}

Reply Api::glitches(const Params& p, int64_t now_ns) const {
  const auto tenant = p.name("tenant"), stage = p.name("stage"), trace = p.name("trace_id");
  const int64_t since = p.integer("since", 1, kMaxGlitchSinceS, 900);
  const int64_t now_s = now_ns / kSecondNs;
  const int64_t from = p.integer("from", 0, now_s + 86400, now_s - since);
  const int64_t to = p.integer("to", 0, now_s + 86400, now_s + 1);
  if (to <= from) throw BadRequest("to must be after from");
  const auto min_s = p.number("min_s", 0, 1e6), max_s = p.number("max_s", 0, 1e6);
  const int limit = static_cast<int>(p.integer("limit", 1, kMaxGlitchLimit, 100));
  const bool filtered = p.has("to") || min_s || max_s || trace;
  nlohmann::json body = {{"journal", !settings_.journal_path.empty()},
                         {"glitches", nlohmann::json::array()}};
  if (settings_.journal_path.empty()) {
    body["note"] = "no journal (journal.path is empty): glitches are counted in /metrics only";
    return json_reply(body);
  }
  std::vector<GlitchRow> rows;
  try {
    // Without the sampler thread (tests) the journal opens here.
    if (!journal_ && !thread_.joinable())
      journal_ = std::make_unique<Journal>(settings_.journal_path, JournalLimits{});
    if (!journal_) return error_reply(503, "the journal is not open yet");
    JournalFilter f;
    f.since_ns = from * kSecondNs;
    f.tenant = tenant;
    f.stage = stage;
    f.limit = filtered ? kGlitchScan : limit;
    rows = journal_->query(f);
  } catch (const std::exception& e) {
    journal_.reset();
    spdlog::warn("api: journal {}: {}", settings_.journal_path, e.what());
    return error_reply(503, "the journal cannot be read now");
  }
  const bool truncated = filtered && rows.size() == static_cast<size_t>(kGlitchScan);
  std::erase_if(rows, [&](const GlitchRow& r) {
    return r.time_ns >= to * kSecondNs || (min_s && r.wall_seconds < *min_s) ||
           (max_s && r.wall_seconds >= *max_s) || (trace && r.trace_id != *trace);
  });
  if (rows.size() > static_cast<size_t>(limit)) rows.resize(limit);
  body["glitches"] = glitch_rows_json(rows);
  body["truncated"] = truncated;
  return json_reply(body);
}

}  // namespace tailcause::exporter::api
