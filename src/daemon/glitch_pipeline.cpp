// SPDX-License-Identifier: Apache-2.0
#include "daemon/glitch_pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <variant>

#include "bpf/attrib.h"
#include "core/detect/breaker_protocol.h"
#include "core/host/clock.h"
#include "core/host/proc_cgroup.h"
#include "core/trace/propagation.h"
#include "core/record/schema.h"
#include "core/detect/verdict.h"
#include "export/breaker_socket.h"
#include "export/breaker_store.h"
#include "export/journal.h"
#include "export/otlp_exporter.h"
#include "probes/route_lookup.h"

namespace tailcause::daemon {
namespace {

constexpr size_t kMaxQueuedGlitches = 10000;  // between two journal writes (about a second)
constexpr auto kHousekeepingInterval = std::chrono::seconds(1);
constexpr uint64_t kBaselineSaveInterval = 60'000'000'000;  // and when stopping
constexpr uint64_t kPruneEveryNs = 60'000'000'000;

core::AnalyzerSettings analyzer_settings(const core::Config& config, const PipelineOptions& o) {
  core::AnalyzerSettings s = core::AnalyzerSettings::from(config);
  s.summary_window_ns = o.summary_window_ns;
  // Stages are kept until their request ends for the OTLP traces and for the journal's
  // propagation trees.
  const bool otlp = o.otlp && !config.otlp.endpoint.empty();
  s.collect_traces = otlp || (o.journal && !config.journal.path.empty());
  s.glitched_traces_only = !otlp;  // the journal keeps only glitched requests' trees
  // The sched family posts who preempted whom once a second (kHousekeepingInterval releases).
  s.evidence_delay_ns = 1'200'000'000;
  return s;
}

// A thread that ran no span of a glitched request but explained its waits: its process's name
// and its own, "hog/worker-3" (read when the request ends; "" once the thread is gone).
std::string thread_name(uint32_t tid) {
  auto read_comm = [](const std::string& path) {
    std::ifstream in(path);
    std::string comm;
    std::getline(in, comm);
    return comm;
  };
  std::string thread = read_comm(fmt::format("/proc/{}/comm", tid));
  if (thread.empty()) return "";
  std::ifstream status(fmt::format("/proc/{}/status", tid));
  std::string line;
  uint32_t tgid = 0;
  while (std::getline(status, line)) {
    if (line.rfind("Tgid:", 0) == 0) {
      tgid = static_cast<uint32_t>(std::strtoul(line.c_str() + 5, nullptr, 10));
      break;
    }
  }
  if (tgid == 0 || tgid == tid) return thread;
  const std::string process = read_comm(fmt::format("/proc/{}/comm", tgid));
  return process.empty() || process == thread ? thread : process + "/" + thread;
}

// The stage's process's memory cgroup, or the nearest ancestor (where a v2 limit lives), that
// was reclaiming around the stage. Read from /proc only for glitches, once some cgroup reclaimed.
std::optional<std::string> memory_pressure(const core::EvidenceBoard& board,
                                           const core::StageRecord& r) {
  std::ifstream in(fmt::format("/proc/{}/cgroup", r.id.pid));
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  for (auto path = core::memory_cgroup_of(text); path; path = core::parent_cgroup(*path)) {
    if (auto m = board.memory_between(*path, r.start_ns, r.end_ns)) {
      return core::describe_memory_pressure(*path, *m);
    }
  }
  return std::nullopt;
}

// The qdisc that held traffic back during the stage on the device its peer's traffic leaves
// through: "lo" for a loopback peer; for another, the device of its route (the host's own
// addresses route through lo too), or any device but lo when the route is unknown; without a
// peer, any device.
std::optional<std::string> qdisc_over_limit(const core::EvidenceBoard& board,
                                            const core::StageRecord& r,
                                            probes::RouteLookup* routes) {
  std::vector<std::string> devices, except;
  if (r.network_peer && core::is_loopback_peer(*r.network_peer)) {
    devices = {"lo"};
  } else if (r.network_peer) {
    auto device = routes ? routes->device_for(*r.network_peer, r.end_ns) : std::nullopt;
    if (device) {
      devices = {std::move(*device)};
    } else {
      except = {"lo"};
    }
  }
  if (auto q = board.qdisc_over_limit(devices, except, r.start_ns, r.end_ns)) {
    return core::describe_qdisc(*q);
  }
  return std::nullopt;
}

// "over_slo 200 ms: cpu_throttled 63%, runqueue 20%": the short form of a verdict, with the
// threshold crossed and its value.
std::string verdict_line(const core::Glitch& g) {
  // The detectors' glitches (cache breakdown, entropy spike) have no SLO check: their cause.
  if (!g.check.glitch()) return g.cause;
  std::string s = core::threshold_text(g.check);
  std::string culprits;
  for (const auto& c : g.verdict.culprits) {
    culprits += fmt::format("{}{} {:.0f}%", culprits.empty() ? "" : ", ",
                            core::component_name(c.component), c.share_of_wall * 100);
  }
  return culprits.empty() ? s : s + ": " + culprits;
}

exporter::GlitchRow journal_row(const core::Glitch& g, int64_t unix_offset_ns) {
  exporter::GlitchRow row;
  row.time_ns = static_cast<int64_t>(g.end_ns) + unix_offset_ns;
  row.tenant = g.tenant;
  row.agent = g.agent;
  row.stage = g.stage;
  row.wall_seconds = static_cast<double>(g.check.wall_ns) * 1e-9;
  for (core::Component c : core::kAllComponents) {
    row.components[c] = static_cast<double>(g.component_ns[core::index_of(c)]) * 1e-9;
  }
  row.page_cache_misses = static_cast<int64_t>(g.page_cache_misses);
  row.cause = g.cause;
  row.verdict = verdict_line(g);
  row.evidence = g.verdict.evidence;
  row.trace_id = g.trace_id;
  return row;
}

exporter::IncidentRow incident_row(const core::Incident& i, std::string key,
                                   int64_t unix_offset_ns) {
  exporter::IncidentRow row;
  row.key = std::move(key);
  row.start_ns = static_cast<int64_t>(i.start_ns) + unix_offset_ns;
  row.end_ns = static_cast<int64_t>(i.end_ns) + unix_offset_ns;
  row.active = i.active;
  row.tenant = i.tenant;
  const core::IncidentStage& lead = i.leading();
  row.stage = lead.stage;
  for (const auto& st : i.stages) row.stages += (row.stages.empty() ? "" : ",") + st.stage;
  row.cause = i.cause;
  row.cause_share = i.cause_share;
  row.slowed = static_cast<int64_t>(i.slowed);
  row.peak_ratio = i.peak_ratio;
  row.median_ratio = i.median_ratio;
  row.baseline_seconds = static_cast<double>(lead.baseline_ns) * 1e-9;
  row.summary = i.describe();
  return row;
}

// breaker.socket_group as a gid: "" keeps the daemon's own group, digits are a gid, else the
// group database (/etc/group, NSS) names it.
std::optional<gid_t> socket_group(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return static_cast<gid_t>(std::stoul(name));
  }
  group grp{};
  group* found = nullptr;
  std::vector<char> buf(16384);
  const int err = getgrnam_r(name.c_str(), &grp, buf.data(), buf.size(), &found);
  if (err != 0 || found == nullptr) {
    throw PipelineError(fmt::format("breaker.socket_group: no group '{}'{}", name,
                                    err ? fmt::format(" ({})", std::strerror(err)) : ""));
  }
  return grp.gr_gid;
}

// A name as an agent passes it to the breaker socket, as the attrib family labels it when the
// SDK passes it (cut to the SDK's field, "unknown" when empty, "__invalid__" when not UTF-8),
// so the two meet on the same breaker.
std::string sdk_label(std::string_view raw, size_t field_size) {
  const bool truncated = raw.size() > field_size - 1;
  return core::label_value(raw.substr(0, field_size - 1), truncated, nullptr);
}

void make_parent_dir(const std::string& path) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw PipelineError(fmt::format("journal: {}: cannot create directory {}: {}", path,
                                    dir.string(), ec.message()));
  }
}

}  // namespace

GlitchPipeline::GlitchPipeline(const core::Config& config, PipelineOptions options)
    : config_(config), options_(options) {
  analyzer_ = std::make_unique<core::GlitchAnalyzer>(analyzer_settings(config_, options_));
  unix_offset_ns_ = core::realtime_minus_monotonic_ns();
  analyzer_->set_unix_offset_ns(unix_offset_ns_);
  stage_heatmap_ = std::make_shared<core::StageHeatmap>(core::StageHeatmapLimits{
      .window_s = config_.ui.history_s, .max_keys = config_.limits.stage_series});
  incidents_ = std::make_unique<core::IncidentDetector>(core::incident_config(config_));
  // Keys in the journal stay unique over restarts: this run's start time, then the detector.
  incident_key_prefix_ = fmt::format(
      "{}-{}", core::realtime_minus_monotonic_ns() + static_cast<int64_t>(core::monotonic_ns()),
      getpid());
  const auto& b = config_.breaker;
  if (options_.persist_breaker && !b.state_file.empty()) {
    try {
      if (exporter::load_breaker_state(analyzer_->breaker(), b.state_file, core::monotonic_ns())) {
        spdlog::info("circuit breakers restored from {} ({} open)", b.state_file,
                     analyzer_->breaker().open_breakers(core::monotonic_ns()).size());
      }
    } catch (const exporter::BreakerStoreError& e) {
      // A damaged state file must not keep the daemon down: start closed, say so.
      spdlog::warn("{}; circuit breakers start closed", e.what());
    }
  }
  try {
    if (options_.journal && !config_.journal.path.empty()) {
      make_parent_dir(config_.journal.path);
      exporter::JournalLimits limits;
      limits.max_age = std::chrono::hours(config_.journal.max_age_h);
      limits.max_bytes = static_cast<int64_t>(config_.journal.max_mb) * 1024 * 1024;
      journal_ = std::make_unique<exporter::Journal>(config_.journal.path, limits);
      if (const int64_t n = journal_->close_stale_incidents())
        spdlog::info("journal: {} incident(s) left open by an earlier run marked ended", n);
      restore_baselines();
    }
    if (options_.otlp && !config_.otlp.endpoint.empty()) {
      otlp_ = std::make_unique<exporter::OtlpExporter>(config_.otlp);
    }
    if (options_.breaker_socket && !b.socket.empty()) {
      socket_ =
          std::make_unique<exporter::BreakerSocket>(b.socket, [this](core::BreakerRequest request) {
            request.tenant = sdk_label(request.tenant, ATTRIB_TENANT_SIZE);
            request.agent = sdk_label(request.agent, ATTRIB_NAME_SIZE);
            request.cache = sdk_label(request.cache, ATTRIB_NAME_SIZE);
            std::lock_guard lock(mu_);
            return core::answer_breaker_request(analyzer_->breaker(), request, core::monotonic_ns(),
                                                &analyzer_->caches());
          });
      socket_->set_access(b.socket_mode, socket_group(b.socket_group));
      socket_->start();
    }
  } catch (const exporter::JournalError& e) {
    throw PipelineError(fmt::format("journal: {}", e.what()));
  } catch (const exporter::OtlpError& e) {
    throw PipelineError(fmt::format("otlp: {}", e.what()));
  } catch (const exporter::BreakerSocketError& e) {
    throw PipelineError(fmt::format("breaker socket: {}", e.what()));
  }
  housekeeping_thread_ = std::thread([this] { housekeeping_loop(); });
}

GlitchPipeline::~GlitchPipeline() { stop(); }

void GlitchPipeline::connect(probes::ProbeSet& set) {
  set_ = &set;
  set.set_record_observer([this](const core::Record& r) { observe(r); });
  std::lock_guard lock(mu_);
  install_hints_locked();
}

probes::RouteLookup* GlitchPipeline::route_lookup() {
  if (!routes_ && !routes_failed_) {
    try {
      routes_ = std::make_unique<probes::RouteLookup>();
    } catch (const std::runtime_error& e) {
      routes_failed_ = true;
      spdlog::warn(
          "network verdicts: no route lookups ({}); a qdisc off lo is matched to any "
          "device",
          e.what());
    }
  }
  return routes_.get();
}

void GlitchPipeline::install_hints_locked() {
  if (!set_) return;
  // Preemptions are read per tick: a stage's are those of the ticks around it.
  constexpr uint64_t kSlackNs = 1'100'000'000;
  analyzer_->set_hint_source([this](const core::StageRecord& r) {
    // Runs inside the record observer, on the collector thread: the set's evidence is ours.
    core::EvidenceHints h;
    const std::string cgroup = set_->cgroup_name(r.cgroup_id);
    if (cgroup.empty()) return h;
    const auto& board = set_->signals().evidence;
    h.cgroup = cgroup;
    if (auto t = board.throttle_between(cgroup, r.start_ns, r.end_ns)) {
      h.quota_cpus = t->quota_cpus;
      if (t->throttled) {
        h.throttled_periods = t->throttled;
        h.periods = t->periods;
        h.throttled_before_stage = t->before_stage;
      }
    }
    if (board.has_memory_samples()) h.memory_pressure = memory_pressure(board, r);
    // Named when another cgroup's requests took a third of the disks' request time or more
    // around the stage: then the stage's own reads queued behind them.
    if (auto d = board.top_disk_user(cgroup, r.start_ns, r.end_ns);
        d && 3 * d->busy_ns >= d->total_busy_ns) {
      h.disk_user = core::describe_disk_user(*d);
    }
    if (board.qdisc_samples() > 0) h.qdisc = qdisc_over_limit(board, r, route_lookup());
    if (auto p = board.top_preemptor(cgroup, r.start_ns, r.end_ns, kSlackNs)) {
      h.runqueue_share =
          static_cast<double>(p->total_wait_ns) / static_cast<double>(r.wall_ns() + 2 * kSlackNs);
      h.preempting_cgroup =
          fmt::format("cgroup {} ({:.0f}% of the run-queue wait, {} of {} preemptions)",
                      p->by_cgroup, p->total_wait_ns ? 100.0 * p->wait_ns / p->total_wait_ns : 0.0,
                      core::format_count(p->preemptions), core::format_count(p->total));
    }
    return h;
  });
}

std::string GlitchPipeline::incident_key(const core::Incident& i) const {
  return fmt::format("{}-{}-{}", incident_key_prefix_, incident_epoch_, i.id);
}

void GlitchPipeline::reconfigure(const core::Config& config) {
  std::lock_guard lock(mu_);
  // The incident detector keeps its baselines unless its settings changed; then its open
  // incidents end here and a new one learns afresh.
  if (core::incident_config(config) != incidents_->config()) {
    incidents_->end_all(core::monotonic_ns());
    for (auto& i : incidents_->drain_changed()) {
      std::string key = incident_key(i);
      incident_queue_.emplace_back(std::move(key), std::move(i));
    }
    incidents_ = std::make_unique<core::IncidentDetector>(core::incident_config(config));
    incident_epoch_++;
  }
  core::AnalyzerOutput parked;  // verdicts waiting for their evidence go out with the old one
  analyzer_->release_parked(core::monotonic_ns(), parked, true);
  queue_glitches_locked(parked);
  const std::string breakers = analyzer_->breaker().serialize();
  auto next = std::make_unique<core::GlitchAnalyzer>(analyzer_settings(config, options_));
  next->set_unix_offset_ns(unix_offset_ns_);
  next->breaker().deserialize(breakers);
  next->continue_counters_of(*analyzer_);
  analyzer_ = std::move(next);
  config_.glitch = config.glitch;
  config_.breaker.slow_ms = config.breaker.slow_ms;
  config_.breaker.trip_after = config.breaker.trip_after;
  config_.breaker.quiet_s = config.breaker.quiet_s;
  config_.cache_breakdown = config.cache_breakdown;
  config_.entropy = config.entropy;
  install_hints_locked();
}

void GlitchPipeline::observe(const core::Record& record) {
  core::AnalyzerOutput out;
  {
    std::lock_guard lock(mu_);
    analyzer_->observe(record, out);
    for (const auto& request : out.recipe_requests) incidents_->observe(request);
    if (const auto* stage = std::get_if<core::StageRecord>(&record)) {
      incidents_->observe(*stage);
      // The stages the analyzer judges (an owner's whole stage), on the journal's clock.
      if (stage->owner_stage()) {
        stage_heatmap_->add(stage->id.tenant, stage->stage,
                            static_cast<int64_t>(stage->end_ns) + unix_offset_ns_,
                            stage->wall_ns());
      }
    }
    queue_glitches_locked(out);
    // The propagation path of each glitched request, for `glitches --show TRACE`.
    for (const auto& t : out.traces) {
      if (!journal_ || !t.glitch() || t.trace_id.empty()) continue;
      // Bounded like the glitches; a tree lost here costs `--show` that request only (the
      // glitch rows, which the dropped counter counts, are queued apart).
      if (tree_queue_.size() >= kMaxQueuedGlitches) continue;
      const core::PropagationTree tree = core::build_propagation(t, thread_name);
      tree_queue_.push_back({t.trace_id, static_cast<int64_t>(t.request.end_ns) + t.unix_offset_ns,
                             core::propagation_json(tree).dump()});
    }
  }
  if (otlp_) {
    for (auto& t : out.traces) otlp_->submit(std::move(t));
  }
}

void GlitchPipeline::queue_glitches_locked(core::AnalyzerOutput& out) {
  for (auto& g : out.glitches) {
    spdlog::debug("glitch: {} {} {}: {}", g.tenant, g.agent, g.stage, g.verdict.evidence);
    if (!journal_) continue;
    if (queue_.size() >= kMaxQueuedGlitches) {
      journal_dropped_++;
      continue;
    }
    queue_.push_back({std::move(g), unix_offset_ns_});
  }
}

void GlitchPipeline::housekeeping_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, kHousekeepingInterval, [this] { return stopping_; });
    const bool last = stopping_;
    const uint64_t now = core::monotonic_ns();
    tick_detectors_locked(now, last);
    // Renewed under the lock, so a stage and its glitch share one offset.
    unix_offset_ns_ = core::realtime_minus_monotonic_ns();
    analyzer_->set_unix_offset_ns(unix_offset_ns_);
    const Round round = take_round_locked(now);
    lock.unlock();
    write_journal(round);
    save_breaker(round);
    lock.lock();
    if (last) return;
  }
}

// The detectors' time-driven work: windows that closed, incidents that opened, grew or ended;
// at the end, those under way end with the daemon.
void GlitchPipeline::tick_detectors_locked(uint64_t now_ns, bool last) {
  analyzer_->tick(now_ns);
  core::AnalyzerOutput out;
  analyzer_->release_parked(now_ns, out, last);
  queue_glitches_locked(out);
  incidents_->tick(now_ns);
  if (last) incidents_->end_all(now_ns);
}

GlitchPipeline::Round GlitchPipeline::take_round_locked(uint64_t now_ns) {
  Round round;
  round.now_ns = now_ns;
  round.glitches.swap(queue_);
  round.trees.swap(tree_queue_);
  round.incidents.swap(incident_queue_);
  for (auto& i : incidents_->drain_changed()) {
    std::string key = incident_key(i);
    round.incidents.emplace_back(std::move(key), std::move(i));
  }
  round.unix_offset_ns = unix_offset_ns_;
  if (journal_ && (stopping_ || now_ns - baselines_saved_ns_ >= kBaselineSaveInterval)) {
    baselines_saved_ns_ = now_ns;
    const int64_t unix_now = static_cast<int64_t>(now_ns) + unix_offset_ns_;
    auto& rows = round.baselines.emplace();
    for (auto& b : incidents_->saved_baselines()) {
      rows.push_back({std::move(b.tenant), std::move(b.stage), unix_now,
                      static_cast<int64_t>(b.latency.count), std::move(b.latency.weights),
                      std::vector<double>(b.mix.begin(), b.mix.end())});
    }
  }
  // The breaker file is rewritten only when its state changed.
  if (options_.persist_breaker && !config_.breaker.state_file.empty()) {
    std::string state = analyzer_->breaker().serialize();
    if (state != last_breaker_state_) {
      round.breaker = analyzer_->breaker();
      last_breaker_state_ = std::move(state);
    }
  }
  return round;
}

void GlitchPipeline::write_journal(const Round& round) {
  append_glitches(round.glitches);
  write_trees(round.trees);
  report_incidents(round);
  save_baselines(round);
  prune_journal(round.now_ns);
}

void GlitchPipeline::save_baselines(const Round& round) {
  if (!journal_ || !round.baselines) return;
  try {
    journal_->write_baselines(*round.baselines);
  } catch (const exporter::JournalError& e) {
    spdlog::warn("journal: incident baselines not saved: {}", e.what());
  }
}

// A restarted daemon judges at once with what the last run learned, instead of warming up
// again (200 stages a series): a fault in its first minutes is an incident all the same.
void GlitchPipeline::restore_baselines() {
  std::vector<core::SavedBaseline> saved;
  for (auto& row : journal_->read_baselines()) {
    core::SavedBaseline b;
    b.tenant = std::move(row.tenant);
    b.stage = std::move(row.stage);
    b.latency.count = row.count > 0 ? static_cast<uint64_t>(row.count) : 0;
    b.latency.weights = std::move(row.weights);
    if (row.mix.size() != core::kComponents) continue;  // another build's components
    std::copy(row.mix.begin(), row.mix.end(), b.mix.begin());
    saved.push_back(std::move(b));
  }
  const size_t taken = incidents_->restore_baselines(saved);
  if (!saved.empty()) {
    spdlog::info("journal: {} of {} incident baseline(s) restored", taken, saved.size());
  }
}

void GlitchPipeline::append_glitches(const std::vector<QueuedGlitch>& glitches) {
  if (!journal_ || glitches.empty()) return;
  std::vector<exporter::GlitchRow> rows;
  rows.reserve(glitches.size());
  for (const auto& q : glitches) rows.push_back(journal_row(q.glitch, q.unix_offset_ns));
  try {
    journal_->append(rows);
    journal_written_ += rows.size();
  } catch (const exporter::JournalError& e) {
    journal_dropped_ += rows.size();
    spdlog::warn("journal: {} glitches not written: {}", rows.size(), e.what());
  }
}

void GlitchPipeline::write_trees(const std::vector<exporter::PropagationRow>& trees) {
  if (!journal_ || trees.empty()) return;
  try {
    journal_->write_propagation(trees);
  } catch (const std::exception& e) {  // JournalError
    spdlog::warn("journal: {} propagation trees not written: {}", trees.size(), e.what());
  }
}

void GlitchPipeline::report_incidents(const Round& round) {
  if (journal_ && !round.incidents.empty()) {
    std::vector<exporter::IncidentRow> rows;
    for (const auto& [key, i] : round.incidents) {
      rows.push_back(incident_row(i, key, round.unix_offset_ns));
    }
    try {
      journal_->write_incidents(rows);
    } catch (const std::exception& e) {  // JournalError
      spdlog::warn("journal: {} incident updates not written: {}", rows.size(), e.what());
    }
  }
  for (const auto& [key, i] : round.incidents) {
    if (!i.active) spdlog::info("incident ended: tenant {}: {}", i.tenant, i.describe());
  }
}

void GlitchPipeline::prune_journal(uint64_t now_ns) {
  if (!journal_ || now_ns - last_prune_ns_ < kPruneEveryNs) return;
  last_prune_ns_ = now_ns;
  try {
    journal_->prune();
  } catch (const exporter::JournalError& e) {
    spdlog::warn("journal: prune failed: {}", e.what());
  }
}

void GlitchPipeline::save_breaker(const Round& round) {
  if (!round.breaker) return;
  try {
    exporter::save_breaker_state(*round.breaker, config_.breaker.state_file, round.now_ns);
  } catch (const exporter::BreakerStoreError& e) {
    spdlog::warn("{}", e.what());
    last_breaker_state_.clear();  // try again next time
  }
}

void GlitchPipeline::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (housekeeping_thread_.joinable()) housekeeping_thread_.join();  // its last round flushes
  if (otlp_) otlp_->stop();
  if (socket_) socket_->stop();
}

void GlitchPipeline::collect(core::MetricSet& out) {
  {
    std::lock_guard lock(mu_);
    analyzer_->collect(out, core::monotonic_ns());
    incidents_->collect(out);
    if (journal_) {
      out.add(core::metric::kJournalGlitchesWritten, core::MetricType::Counter,
              "Glitches written to the journal", {}, static_cast<double>(journal_written_));
      out.add(core::metric::kJournalGlitchesDropped, core::MetricType::Counter,
              "Glitches not written to the journal (queue full or write error)", {},
              static_cast<double>(journal_dropped_));
    }
  }
  if (otlp_) otlp_->collect(out);
  if (socket_) socket_->collect(out);
}

core::AnalyzerSummary GlitchPipeline::summary() {
  std::lock_guard lock(mu_);
  core::AnalyzerSummary s = analyzer_->summary(core::monotonic_ns());
  s.incidents = incidents_->incidents();
  return s;
}

std::vector<core::Incident> GlitchPipeline::incidents() {
  std::lock_guard lock(mu_);
  return incidents_->incidents();
}

uint64_t GlitchPipeline::glitches() {
  std::lock_guard lock(mu_);
  return analyzer_->glitch_count();
}

}  // namespace tailcause::daemon
