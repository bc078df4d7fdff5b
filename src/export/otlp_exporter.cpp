// SPDX-License-Identifier: Apache-2.0
#include "export/otlp_exporter.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <ctime>
#include <random>

#include "core/record/schema.h"
#include "export/otlp_gzip.h"
#include "otlp/trace_service.pb.h"

namespace tailcause::exporter {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Upper bounds of tailcause_otlp_export_seconds (one POST attempt).
constexpr std::array<double, 11> kSecondsBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                   0.5,   1,    2.5,   5,    10};
constexpr std::array<const char*, static_cast<size_t>(DropReason::count_)> kDropNames = {
    "queue_full", "budget", "rejected", "shutdown", "retries_exhausted", "invalid"};
constexpr auto kErrorLogInterval = std::chrono::seconds(30);

// The OTLP/HTTP spec's retryable answers; every other failure status is final.
bool retryable_status(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

uint64_t steady_ns(Clock::time_point t) {
  return static_cast<uint64_t>(
      duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

bool valid_trace_id(const std::string& id) {
  return id.size() == 32 && hex_to_bytes(id) && id.find_first_not_of('0') != std::string::npos;
}

// Spans a 2xx answer says the collector refused (partial success), 0 when it says nothing.
uint64_t rejected_in_response(const std::string& body, uint64_t spans) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse resp;
  if (body.empty() || !resp.ParseFromString(body) || !resp.has_partial_success()) return 0;
  const int64_t n = resp.partial_success().rejected_spans();
  return n <= 0 ? 0 : std::min<uint64_t>(static_cast<uint64_t>(n), spans);
}

}  // namespace

std::optional<milliseconds> parse_retry_after(std::string_view value,
                                              std::chrono::system_clock::time_point now) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  uint64_t secs = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), secs);
  if (ec == std::errc() && end == value.data() + value.size()) {
    return milliseconds(std::min<uint64_t>(secs, 1'000'000'000) * 1000);
  }
  // An HTTP date, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  const std::string text(value);
  const char* rest = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!rest || *rest != '\0') return std::nullopt;
  const auto when = std::chrono::system_clock::from_time_t(timegm(&tm));
  return when > now ? duration_cast<milliseconds>(when - now) : milliseconds(0);
}

OtlpExporter::OtlpExporter(const core::OtlpSettings& settings, OtlpTuning tuning)
    : settings_(settings),
      tuning_(tuning),
      resource_(local_resource(settings.service_name)),
      sampler_(core::SamplerConfig{settings.budget_spans_per_s, settings.sample_normal}),
      seconds_buckets_(kSecondsBounds.size() + 1, 0) {
  if (settings_.endpoint.empty()) throw OtlpError("OTLP export: no endpoint configured");
  try {
    endpoint_ = core::parse_otlp_endpoint(settings_.endpoint);
  } catch (const core::ConfigError& e) {
    throw OtlpError(e.what());
  }
  if (endpoint_.scheme == "https") {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    client_ = std::make_unique<httplib::SSLClient>(endpoint_.host, endpoint_.port);
#else
    throw OtlpError("OTLP endpoint '" + settings_.endpoint +
                    "': this build's cpp-httplib has no TLS support; use an http:// endpoint "
                    "(e.g. a local collector)");
#endif
  } else {
    client_ = std::make_unique<httplib::ClientImpl>(endpoint_.host, endpoint_.port);
  }
  client_->set_keep_alive(true);
  httplib::Headers headers;
  for (const auto& [name, value] : settings_.headers) headers.emplace(name, value);
  headers.emplace("User-Agent", std::string("tailcause/") + TAILCAUSE_VERSION_STRING);
  client_->set_default_headers(std::move(headers));
  if (settings_.batch_spans == 0) settings_.batch_spans = 1;
  resource_.attributes = settings_.resource_attributes;
  worker_ = std::thread([this] { run(); });
}

OtlpExporter::~OtlpExporter() { stop(); }

void OtlpExporter::drop(DropReason r, uint64_t spans) { dropped_[static_cast<size_t>(r)] += spans; }

void OtlpExporter::submit(core::RequestTrace trace) {
  const size_t spans = trace.span_count();
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  if (stopping_) return drop(DropReason::shutdown, spans);
  if (!valid_trace_id(trace.trace_id)) return drop(DropReason::invalid, spans);
  // Unsampled and over-budget traces are counted by the sampler.
  const core::Identity& id = trace.request.id;
  const std::optional<bool> parent_sampled = trace.trace_id_from_agent && !id.parent_span_id.empty()
                                                 ? std::optional<bool>((id.trace_flags & 1) != 0)
                                                 : std::nullopt;
  if (sampler_.decide(trace.trace_id, trace.glitch(), spans, steady_ns(now), parent_sampled) !=
      core::SampleResult::keep) {
    return;
  }
  if (queue_spans_ + spans > settings_.queue_spans) return drop(DropReason::queue_full, spans);
  const bool was_empty = queue_.empty();
  queue_.push_back(Entry{std::move(trace), spans, now});
  queue_spans_ += spans;
  // The worker sleeps without a deadline on an empty queue: the first trace starts its flush
  // timer, a full batch sends at once.
  if (was_empty || queue_spans_ >= settings_.batch_spans) wake_.notify_one();
}

void OtlpExporter::run() {
  for (;;) {
    std::vector<core::RequestTrace> batch;
    size_t spans = 0;
    {
      std::unique_lock lock(mu_);
      // A full batch, a partial one that has waited flush_interval, or stop().
      while (!stopping_ && queue_spans_ < settings_.batch_spans) {
        if (queue_.empty()) {
          wake_.wait(lock);
        } else if (wake_.wait_until(lock, queue_.front().queued_at + tuning_.flush_interval) ==
                   std::cv_status::timeout) {
          break;
        }
      }
      if (queue_.empty() || (stopping_ && Clock::now() >= stop_deadline_)) {
        if (stopping_) break;
        continue;
      }
      // Whole traces only, up to batch_spans (one trace even when it alone is larger).
      while (!queue_.empty() &&
             (batch.empty() || spans + queue_.front().spans <= settings_.batch_spans)) {
        spans += queue_.front().spans;
        batch.push_back(std::move(queue_.front().trace));
        queue_.pop_front();
      }
      queue_spans_ -= spans;
      in_flight_spans_ = spans;
    }
    send(batch, spans);
    std::lock_guard lock(mu_);
    in_flight_spans_ = 0;
  }
  std::lock_guard lock(mu_);
  drop(DropReason::shutdown, queue_spans_);
  queue_.clear();
  queue_spans_ = 0;
  worker_done_ = true;
  done_.notify_all();
}

void OtlpExporter::observe_attempt(double seconds, const std::string& error_kind) {
  std::lock_guard lock(mu_);
  ++requests_;
  const size_t i = std::lower_bound(kSecondsBounds.begin(), kSecondsBounds.end(), seconds) -
                   kSecondsBounds.begin();
  ++seconds_buckets_[i];
  seconds_sum_ += seconds;
  if (!error_kind.empty()) ++errors_[error_kind];
}

bool OtlpExporter::wait_to_retry(Clock::duration delay) {
  const auto wake_at = Clock::now() + delay;
  std::unique_lock lock(mu_);
  if (!stopping_) wake_.wait_until(lock, wake_at, [this] { return stopping_; });
  if (!stopping_) return true;
  // Shutting down: retry only when it still fits before the deadline.
  if (wake_at > stop_deadline_) return false;
  lock.unlock();
  std::this_thread::sleep_until(wake_at);
  return true;
}

void OtlpExporter::send(const std::vector<core::RequestTrace>& batch, size_t spans) {
  const bool gzip = settings_.compression == "gzip";
  const std::string body =
      gzip ? gzip_compress(encode_traces(batch, resource_)) : encode_traces(batch, resource_);
  const httplib::Headers body_headers =
      gzip ? httplib::Headers{{"Content-Encoding", "gzip"}} : httplib::Headers{};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(1.0 - tuning_.jitter, 1.0 + tuning_.jitter);
  milliseconds backoff = tuning_.initial_backoff;
  const milliseconds timeout(settings_.timeout_ms ? settings_.timeout_ms : 1);

  for (uint32_t attempt = 1;; ++attempt) {
    if (!limit_attempt(timeout, spans)) return;
    const auto t0 = Clock::now();
    httplib::Result res =
        client_->Post(endpoint_.path, body_headers, body, "application/x-protobuf");
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const bool ok = res && res->status >= 200 && res->status < 300;
    const std::string kind = ok ? "" : res ? "http_" + std::to_string(res->status) : "connection";
    observe_attempt(seconds, kind);

    if (ok) {
      const uint64_t rejected = rejected_in_response(res->body, spans);
      std::lock_guard lock(mu_);
      exported_ += spans - rejected;
      drop(DropReason::rejected, rejected);
      return;
    }
    const bool retryable = !res || retryable_status(res->status);
    const std::string failure =
        res ? "HTTP " + std::to_string(res->status) : httplib::to_string(res.error());
    if (!retry_failed(failure, retryable, spans, attempt)) return;
    milliseconds delay = duration_cast<milliseconds>(backoff * jitter(rng));
    if (res && res->has_header("Retry-After")) {
      if (auto asked = parse_retry_after(res->get_header_value("Retry-After"),
                                         std::chrono::system_clock::now())) {
        delay = std::min(*asked, tuning_.max_retry_after);
      }
    }
    backoff = std::min(backoff * 2, tuning_.max_backoff);
    if (!wait_to_retry(delay)) {
      std::lock_guard lock(mu_);
      return drop(DropReason::shutdown, spans);
    }
  }
}

bool OtlpExporter::limit_attempt(milliseconds timeout, size_t spans) {
  milliseconds limit = timeout;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      const auto left = duration_cast<milliseconds>(stop_deadline_ - Clock::now());
      if (left <= milliseconds(0)) {
        drop(DropReason::shutdown, spans);
        return false;
      }
      limit = std::min(limit, left);
    }
  }
  client_->set_connection_timeout(limit);
  client_->set_read_timeout(limit);
  client_->set_write_timeout(limit);
  return true;
}

bool OtlpExporter::retry_failed(const std::string& failure, bool retryable, size_t spans,
                                uint32_t attempt) {
  std::lock_guard lock(mu_);
  if (Clock::now() - last_error_log_ >= kErrorLogInterval) {
    last_error_log_ = Clock::now();
    spdlog::warn("OTLP export to {} failed: {} ({} spans, {})", settings_.endpoint, failure, spans,
                 retryable ? "retrying" : "dropped");
  }
  if (!retryable) {
    drop(DropReason::rejected, spans);
    return false;
  }
  if (attempt >= tuning_.max_attempts) {
    drop(DropReason::retries_exhausted, spans);
    return false;
  }
  return true;
}

void OtlpExporter::stop() {
  {
    std::lock_guard lock(mu_);
    if (joined_) return;
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_ = Clock::now() + tuning_.shutdown_grace;
    }
  }
  wake_.notify_all();
  {
    std::unique_lock lock(mu_);
    if (!done_.wait_until(lock, stop_deadline_ + milliseconds(100),
                          [this] { return worker_done_; })) {
      // A request still under way past the deadline: shut its socket so the worker can finish.
      client_->stop();
    }
  }
  worker_.join();
  client_->stop();  // closes the kept-alive connection: a stopped exporter holds no socket
  std::lock_guard lock(mu_);
  joined_ = true;
}

OtlpExporter::Stats OtlpExporter::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.exported = exported_;
  s.unsampled = sampler_.unsampled_spans();
  for (size_t r = 0; r < kDropNames.size(); ++r) s.dropped[kDropNames[r]] = dropped_[r];
  s.dropped["budget"] += sampler_.over_budget_spans();
  s.errors = errors_;
  s.queued_spans = queue_spans_;
  s.in_flight_spans = in_flight_spans_;
  s.requests = requests_;
  return s;
}

void OtlpExporter::collect(core::MetricSet& out) const {
  const Stats s = stats();
  using core::MetricType;
  out.add(core::metric::kOtlpSpansExported, MetricType::Counter,
          "Spans the OTLP collector accepted.", {}, static_cast<double>(s.exported));
  for (const auto& [reason, n] : s.dropped) {
    if (reason == "invalid" && n == 0) continue;  // a bug elsewhere if ever non-zero
    out.add(core::metric::kOtlpSpansDropped, MetricType::Counter,
            "Spans not exported, by reason: queue_full, budget (over otlp.budget_spans_per_s), "
            "rejected (by the collector), shutdown, retries_exhausted.",
            {{"reason", reason}}, static_cast<double>(n));
  }
  out.add(core::metric::kOtlpSpansUnsampled, MetricType::Counter,
          "Spans of normal requests left out by otlp.sample_normal (by design, not a loss).", {},
          static_cast<double>(s.unsampled));
  auto& errors = out.family(core::metric::kOtlpExportErrors, MetricType::Counter,
                            "Failed OTLP export attempts, by kind: connection or http_<status>.");
  for (const auto& [kind, n] : s.errors) {
    core::Sample sample;
    sample.labels = {{"kind", kind}};
    sample.value = static_cast<double>(n);
    errors.samples.push_back(std::move(sample));
  }
  out.add(core::metric::kOtlpQueueSpans, MetricType::Gauge,
          "Spans waiting to be exported (queued and in flight).", {},
          static_cast<double>(s.queued_spans + s.in_flight_spans));

  core::HistogramData h;
  {
    std::lock_guard lock(mu_);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kSecondsBounds.size(); ++i) {
      cumulative += seconds_buckets_[i];
      h.buckets.emplace_back(kSecondsBounds[i], cumulative);
    }
    h.count = cumulative + seconds_buckets_.back();
    h.sum = seconds_sum_;
  }
  out.add_histogram(core::metric::kOtlpExportSeconds, "Duration of OTLP export attempts (POSTs).",
                    {}, std::move(h));
}

}  // namespace tailcause::exporter
