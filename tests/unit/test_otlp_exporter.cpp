// SPDX-License-Identifier: Apache-2.0
// OtlpExporter against a real HTTP collector (httplib::Server on 127.0.0.1): batching, retry
// with backoff and Retry-After, final 4xx, partial success, a collector that is down (bounded
// queue, drops counted, memory flat), stop() that neither hangs nor loses count.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/trace/trace_ids.h"
#include "export/otlp_exporter.h"
#include "export/otlp_gzip.h"
#include "otlp/trace_service.pb.h"
#include "stage_builder.h"

namespace tailcause::exporter {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace pb = opentelemetry::proto;

struct Reply {
  int status = 200;
  std::string retry_after;  // header value, "" for none
  std::string body;
};

struct Received {
  std::string content_type, test_header, path, content_encoding;
  int spans = 0;
  Clock::time_point at;
  std::string body;
};

// A collector on 127.0.0.1 that records every POST and answers from a script (then 200).
class Collector {
 public:
  explicit Collector(int port = 0) {
    server_.Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res) {
      Received r;
      r.content_type = req.get_header_value("Content-Type");
      r.test_header = req.get_header_value("X-Test");
      r.content_encoding = req.get_header_value("Content-Encoding");
      r.path = req.path;
      r.at = Clock::now();
      r.body = req.body;
      pb::collector::trace::v1::ExportTraceServiceRequest decoded;
      if (decoded.ParseFromString(req.body)) {
        for (const auto& rs : decoded.resource_spans())
          for (const auto& ss : rs.scope_spans()) r.spans += ss.spans_size();
      }
      Reply reply;
      std::function<void()> hold;
      {
        std::lock_guard lock(mu_);
        received_.push_back(r);
        if (!script_.empty()) {
          reply = script_.front();
          script_.pop_front();
        }
        hold = hold_;
      }
      if (hold) hold();
      res.status = reply.status;
      if (!reply.retry_after.empty()) res.set_header("Retry-After", reply.retry_after);
      res.set_content(reply.body, "application/x-protobuf");
    });
    port_ = port ? (server_.bind_to_port("127.0.0.1", port) ? port : -1)
                 : server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Collector() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces";
  }
  void script(std::vector<Reply> replies) {
    std::lock_guard lock(mu_);
    script_.assign(replies.begin(), replies.end());
  }
  void hold_with(std::function<void()> f) {
    std::lock_guard lock(mu_);
    hold_ = std::move(f);
  }
  std::vector<Received> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }
  int spans() const {
    int n = 0;
    for (const auto& r : received()) n += r.spans;
    return n;
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  mutable std::mutex mu_;
  std::deque<Reply> script_;
  std::vector<Received> received_;
  std::function<void()> hold_;
};

// Polls `pred` for up to `limit` (generous: the machine is shared and noisy).
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

// A port nothing listens on: bound to learn a free number, then closed.
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

core::RequestTrace make_trace(uint64_t n, size_t stages = 0, bool glitch = false) {
  core::RequestTrace t;
  t.request.id.request_id = n;
  t.request.id.pid = 100;
  t.request.id.tenant = "acme";
  t.request.id.agent = "rag";
  t.request.start_ns = 1'000'000'000 + n * 1000;
  t.request.end_ns = t.request.start_ns + 500'000'000;
  t.trace_id = core::derive_trace_id(100, n, 42);
  t.unix_offset_ns = 1'700'000'000'000'000'000;
  for (size_t i = 0; i < stages; ++i) {
    t.stages.push_back(testing::StageBuilder()
                           .identity(t.request.id)
                           .stage("generation")
                           .tid(101)
                           .start_ns(t.request.start_ns + i * 1000)
                           .wall_ns(500)
                           .build());
  }
  if (glitch) {
    core::Glitch g;
    g.stage = "request";
    g.start_ns = t.request.start_ns;
    g.verdict.evidence = "request 500 ms";
    t.glitches.push_back(g);
  }
  return t;
}

core::OtlpSettings settings_for(const std::string& endpoint) {
  core::OtlpSettings s;
  s.endpoint = endpoint;
  s.headers = {{"X-Test", "yes"}};
  s.budget_spans_per_s = 1'000'000;
  s.sample_normal = 1.0;
  s.queue_spans = 10'000;
  s.batch_spans = 10;
  s.timeout_ms = 2000;
  return s;
}

OtlpTuning fast() {
  OtlpTuning t;
  t.flush_interval = 200ms;
  t.initial_backoff = 10ms;
  t.max_backoff = 50ms;
  t.max_attempts = 5;
  t.shutdown_grace = 1000ms;
  return t;
}

uint64_t dropped_total(const OtlpExporter::Stats& s) {
  uint64_t n = 0;
  for (const auto& [reason, v] : s.dropped) n += v;
  return n;
}

TEST(OtlpExporter, BatchesUpToBatchSpansAndSendsProtobuf) {
  Collector c;
  OtlpExporter e(settings_for(c.endpoint()), fast());
  for (uint64_t i = 0; i < 25; ++i) e.submit(make_trace(i));  // one span each
  ASSERT_TRUE(eventually([&] { return c.spans() == 25; })) << c.spans();
  const auto got = c.received();
  EXPECT_GE(got.size(), 3u);
  for (const auto& r : got) {
    EXPECT_LE(r.spans, 10);
    EXPECT_GT(r.spans, 0);
    EXPECT_EQ(r.content_type, "application/x-protobuf");
    EXPECT_EQ(r.test_header, "yes");
    EXPECT_EQ(r.path, "/v1/traces");
  }
  EXPECT_TRUE(eventually([&] { return e.stats().exported == 25; }));
  e.stop();
  const auto s = e.stats();
  EXPECT_EQ(dropped_total(s), 0u);
  EXPECT_TRUE(s.errors.empty());
}

// gzip by default (cpp-httplib's server inflates it before the handler: the spans arriving
// whole show the body was a gzip member); otlp.compression none sends the protobuf as is.
TEST(OtlpExporter, GzipsBodiesUnlessCompressionIsNone) {
  for (const char* compression : {"gzip", "none"}) {
    Collector c;
    auto settings = settings_for(c.endpoint());
    settings.compression = compression;
    OtlpExporter e(settings, fast());
    for (uint64_t i = 0; i < 10; ++i) e.submit(make_trace(i));
    ASSERT_TRUE(eventually([&] { return c.spans() == 10; })) << compression;
    for (const auto& r : c.received()) {
      EXPECT_EQ(r.content_encoding, std::string(compression) == "gzip" ? "gzip" : "");
    }
  }
}

TEST(OtlpGzip, RoundTripAndRefusals) {
  std::string body;
  for (int i = 0; i < 1000; ++i) body += "tailcause.component.runqueue ";
  const std::string z = gzip_compress(body);
  EXPECT_LT(z.size(), body.size() / 10);              // repetitive text compresses
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
  EXPECT_EQ(gzip_decompress(z), body);
  EXPECT_EQ(gzip_decompress(gzip_compress("")), "");
  EXPECT_FALSE(gzip_decompress(z.substr(0, z.size() / 2)));  // cut short
  EXPECT_FALSE(gzip_decompress("not gzip at all"));
  EXPECT_FALSE(gzip_decompress(z, 100));  // inflates past the cap
}

TEST(OtlpExporter, TracesStayWholeAndAPartialBatchLeavesAfterTheInterval) {
  Collector c;
  auto settings = settings_for(c.endpoint());
  settings.batch_spans = 100;
  auto tuning = fast();
  tuning.flush_interval = 1s;  // the three submits land well within it, even on a busy machine
  OtlpExporter e(settings, tuning);
  for (uint64_t i = 0; i < 3; ++i) e.submit(make_trace(i, 3));  // 4 spans each, 12 < 100
  ASSERT_TRUE(eventually([&] { return c.spans() == 12; }));
  EXPECT_EQ(c.received().size(), 1u);  // one flush after flush_interval, not one POST per trace

  // Traces are not split: batch_spans 10 and 4-span traces give batches of 8 + 4.
  Collector c2;
  settings = settings_for(c2.endpoint());
  OtlpExporter e2(settings, fast());
  for (uint64_t i = 0; i < 3; ++i) e2.submit(make_trace(i, 3));
  ASSERT_TRUE(eventually([&] { return c2.spans() == 12; }));
  for (const auto& r : c2.received()) EXPECT_EQ(r.spans % 4, 0);
}

TEST(OtlpExporter, RetriesA503ThenSucceeds) {
  Collector c;
  c.script({{503, "0", ""}, {503, "", ""}});
  OtlpExporter e(settings_for(c.endpoint()), fast());
  e.submit(make_trace(1, 2));
  ASSERT_TRUE(eventually([&] { return e.stats().exported == 3; }));
  const auto got = c.received();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].body, got[2].body);  // the same batch, resent
  const auto s = e.stats();
  EXPECT_EQ(s.errors.at("http_503"), 2u);
  EXPECT_EQ(dropped_total(s), 0u);
  EXPECT_EQ(s.requests, 3u);
}

TEST(OtlpExporter, HonoursRetryAfter) {
  Collector c;
  c.script({{429, "1", ""}});
  OtlpExporter e(settings_for(c.endpoint()), fast());  // own backoff: 10 ms
  e.submit(make_trace(1));
  ASSERT_TRUE(eventually([&] { return e.stats().exported == 1; }));
  const auto got = c.received();
  ASSERT_EQ(got.size(), 2u);
  // The collector asked for one second; the exporter's own backoff would have been ~10 ms.
  EXPECT_GE(got[1].at - got[0].at, 900ms);
  EXPECT_EQ(e.stats().errors.at("http_429"), 1u);
}

TEST(OtlpExporter, RetriesConnectionErrorsUntilTheCollectorComesUp) {
  const int port = closed_port();
  auto tuning = fast();
  tuning.max_attempts = 1000;
  OtlpExporter e(settings_for("http://127.0.0.1:" + std::to_string(port) + "/v1/traces"), tuning);
  e.submit(make_trace(1, 1));
  ASSERT_TRUE(eventually([&] { return e.stats().errors.count("connection") > 0; }));
  Collector c(port);
  ASSERT_TRUE(eventually([&] { return e.stats().exported == 2; }));
  EXPECT_EQ(c.spans(), 2);
  EXPECT_EQ(dropped_total(e.stats()), 0u);
  e.stop();  // closes the kept-alive connection before the collector shuts down
}

TEST(OtlpExporter, A400IsDroppedAsRejectedWithoutRetry) {
  Collector c;
  c.script({{400, "", ""}});
  OtlpExporter e(settings_for(c.endpoint()), fast());
  e.submit(make_trace(1, 4));
  ASSERT_TRUE(eventually([&] { return e.stats().dropped.at("rejected") == 5; }));
  std::this_thread::sleep_for(300ms);  // room for a wrong retry to show up
  EXPECT_EQ(c.received().size(), 1u);
  const auto s = e.stats();
  EXPECT_EQ(s.exported, 0u);
  EXPECT_EQ(s.errors.at("http_400"), 1u);
}

TEST(OtlpExporter, PartialSuccessCountsTheRejectedSpans) {
  Collector c;
  pb::collector::trace::v1::ExportTraceServiceResponse resp;
  resp.mutable_partial_success()->set_rejected_spans(2);
  resp.mutable_partial_success()->set_error_message("2 spans too old");
  c.script({{200, "", resp.SerializeAsString()}});
  OtlpExporter e(settings_for(c.endpoint()), fast());
  e.submit(make_trace(1, 4));
  ASSERT_TRUE(eventually([&] { return e.stats().exported == 3; }));
  EXPECT_EQ(e.stats().dropped.at("rejected"), 2u);
}

TEST(OtlpExporter, GivesUpAfterMaxAttempts) {
  Collector c;
  c.script({{503, "", ""}, {502, "", ""}, {504, "", ""}, {503, "", ""}});
  auto tuning = fast();
  tuning.max_attempts = 3;
  OtlpExporter e(settings_for(c.endpoint()), tuning);
  e.submit(make_trace(1, 1));
  ASSERT_TRUE(eventually([&] { return e.stats().dropped.at("retries_exhausted") == 2; }));
  EXPECT_EQ(c.received().size(), 3u);
  const auto s = e.stats();
  EXPECT_EQ(s.errors.at("http_503"), 1u);
  EXPECT_EQ(s.errors.at("http_502"), 1u);
  EXPECT_EQ(s.errors.at("http_504"), 1u);
}

long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST(OtlpExporter, CollectorDownKeepsTheQueueBoundedAndCountsEveryDrop) {
  auto settings = settings_for("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces");
  settings.queue_spans = 200;
  settings.batch_spans = 50;
  settings.budget_spans_per_s = 4'000'000'000;  // only the queue limits here
  auto tuning = fast();
  tuning.initial_backoff = 100ms;
  tuning.max_backoff = 200ms;
  tuning.max_attempts = 1'000'000;
  tuning.shutdown_grace = 300ms;
  OtlpExporter e(settings, tuning);
  uint64_t submitted = 0;
  auto burst = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i, ++submitted) {
      e.submit(make_trace(submitted, 4));
      if (i % 1000 == 0) {
        const auto s = e.stats();
        ASSERT_LE(s.queued_spans, 200u);
        ASSERT_LE(s.in_flight_spans, 50u);
      }
    }
  };
  burst(20'000);
  ASSERT_TRUE(eventually([&] { return e.stats().errors.count("connection") > 0; }));
  const long rss_before = rss_kb();
  burst(200'000);  // 1,000,000 spans more: held, they would take well over 100 MB
  const long rss_after = rss_kb();
  // ASan's allocator keeps freed memory in quarantine (256 MB): RSS says nothing there.
  if (!kAddressSanitizer) {
    EXPECT_LT(rss_after - rss_before, 16 * 1024) << rss_before << " -> " << rss_after << " kB";
  }

  core::MetricSet m;
  e.collect(m);
  const auto* queue = m.find("tailcause_otlp_queue_spans", {});
  ASSERT_NE(queue, nullptr);
  EXPECT_LE(queue->value, 250);
  const auto* full = m.find("tailcause_otlp_spans_dropped", {{"reason", "queue_full"}});
  ASSERT_NE(full, nullptr);
  EXPECT_GE(full->value, 220'000.0 * 5 - 250);

  const auto t0 = Clock::now();
  e.stop();
  EXPECT_LT(Clock::now() - t0, 10s);  // shutdown_grace is 300 ms: this is only a hang check
  const auto s = e.stats();
  EXPECT_EQ(s.exported, 0u);
  EXPECT_EQ(s.queued_spans + s.in_flight_spans, 0u);
  EXPECT_EQ(dropped_total(s), submitted * 5);  // every span accounted for
  EXPECT_GT(s.dropped.at("shutdown"), 0u);
}

TEST(OtlpExporter, StopCutsARequestTheCollectorNeverAnswers) {
  // Declared before the collector, so they outlive its server thread (which waits on them).
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  Collector c;
  c.hold_with([&] {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 30s, [&] { return release; });
  });
  auto settings = settings_for(c.endpoint());
  settings.timeout_ms = 60'000;
  auto tuning = fast();
  tuning.shutdown_grace = 300ms;
  OtlpExporter e(settings, tuning);
  e.submit(make_trace(1, 2));
  ASSERT_TRUE(eventually([&] { return c.received().size() == 1; }));
  const auto t0 = Clock::now();
  e.stop();
  EXPECT_LT(Clock::now() - t0, 10s);  // a hang check: without the cut it would take 60 s
  const auto s = e.stats();
  EXPECT_EQ(s.exported, 0u);
  EXPECT_EQ(s.dropped.at("shutdown"), 3u);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST(OtlpExporter, StopFlushesTheQueueAndLaterSubmitsAreDropped) {
  Collector c;
  auto settings = settings_for(c.endpoint());
  settings.batch_spans = 1000;
  auto tuning = fast();
  tuning.flush_interval = 60s;  // only stop() sends them
  OtlpExporter e(settings, tuning);
  for (uint64_t i = 0; i < 5; ++i) e.submit(make_trace(i, 1));
  e.stop();
  EXPECT_EQ(c.spans(), 10);
  EXPECT_EQ(e.stats().exported, 10u);
  e.submit(make_trace(99, 1));
  EXPECT_EQ(e.stats().dropped.at("shutdown"), 2u);
  e.stop();  // idempotent
}

TEST(OtlpExporter, AppliesTheSamplerAndTheBudget) {
  Collector c;
  auto settings = settings_for(c.endpoint());
  settings.budget_spans_per_s = 20;
  settings.sample_normal = 0.0;
  OtlpExporter e(settings, fast());
  for (uint64_t i = 0; i < 50; ++i) e.submit(make_trace(i, 1));           // normal: sampled out
  for (uint64_t i = 100; i < 130; ++i) e.submit(make_trace(i, 0, true));  // 30 glitch spans
  e.stop();
  const auto s = e.stats();
  EXPECT_EQ(s.unsampled, 100u);
  EXPECT_GE(s.dropped.at("budget"), 5u);  // the bucket holds 20, refilling 20 a second
  EXPECT_EQ(s.exported + s.dropped.at("budget"), 30u);
  EXPECT_EQ(static_cast<uint64_t>(c.spans()), s.exported);
}

TEST(OtlpExporter, CollectNamesEveryFamily) {
  Collector c;
  c.script({{500, "", ""}});
  OtlpExporter e(settings_for(c.endpoint()), fast());
  e.submit(make_trace(1));
  ASSERT_TRUE(eventually([&] { return e.stats().requests == 1; }));
  e.submit(make_trace(2));
  ASSERT_TRUE(eventually([&] { return e.stats().exported == 1; }))
      << e.stats().requests << " " << e.stats().queued_spans << " " << e.stats().in_flight_spans
      << " " << c.received().size() << " " << e.stats().dropped.at("rejected");
  core::MetricSet m;
  e.collect(m);
  EXPECT_EQ(m.find("tailcause_otlp_spans_exported", {})->value, 1);
  for (const char* reason : {"queue_full", "budget", "rejected", "shutdown", "retries_exhausted"}) {
    EXPECT_NE(m.find("tailcause_otlp_spans_dropped", {{"reason", reason}}), nullptr) << reason;
  }
  EXPECT_EQ(m.find("tailcause_otlp_spans_dropped", {{"reason", "rejected"}})->value, 1);
  EXPECT_EQ(m.find("tailcause_otlp_export_errors", {{"kind", "http_500"}})->value, 1);
  EXPECT_NE(m.find("tailcause_otlp_spans_unsampled", {}), nullptr);
  EXPECT_NE(m.find("tailcause_otlp_queue_spans", {}), nullptr);
  const auto* h = m.find("tailcause_otlp_export_seconds", {});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.count, 2u);
  EXPECT_GT(h->histogram.sum, 0);
}

TEST(OtlpExporter, RejectsBadEndpoints) {
  for (const char* bad :
       {"", "ftp://collector:4318", "http://", "http://host:99999/v1/traces", "collector:4318"}) {
    EXPECT_THROW(OtlpExporter(settings_for(bad)), OtlpError) << bad;
  }
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  EXPECT_NO_THROW(OtlpExporter(settings_for("https://127.0.0.1:4318/v1/traces")));
#else
  EXPECT_THROW(OtlpExporter(settings_for("https://127.0.0.1:4318/v1/traces")), OtlpError);
#endif
}

TEST(OtlpRetryAfter, Parses) {
  const auto now = std::chrono::system_clock::from_time_t(1'445'412'470);  // 07:27:50 GMT
  EXPECT_EQ(parse_retry_after("0", now), 0ms);
  EXPECT_EQ(parse_retry_after(" 3 ", now), 3000ms);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), 10000ms);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), 0ms);
  EXPECT_FALSE(parse_retry_after("-1", now));
  EXPECT_FALSE(parse_retry_after("soon", now));
  EXPECT_FALSE(parse_retry_after("", now));
}

}  // namespace
}  // namespace tailcause::exporter
