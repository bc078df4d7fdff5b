// SPDX-License-Identifier: Apache-2.0
// The read-only HTTP endpoint, a thin router: /metrics (Prometheus text or OpenMetrics by Accept
// header), / (the web UI, embedded at build time from src/export/ui/), /api/v1/ (the JSON API,
// export/api/), /healthz. Anything that changes behaviour goes elsewhere (local socket).
//
// Anyone who can reach the port can talk to it, so no client may switch it off, swell it or
// starve a scrape: one I/O thread holds every connection (an idle or slow one costs a file
// descriptor, never a worker; the oldest give way to newcomers, http/connection_table.h),
// scrapes are collected and rendered on a lane of their own (http/scrape_lane.h) and the JSON
// API on a bounded, lower-priority lane (http/work_lane.h).
#pragma once

#include <cstddef>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/config/config.h"
#include "core/record/metrics.h"
#include "export/api/api.h"
#include "export/http/endpoint.h"

namespace tailcause::exporter {

namespace http {
class ScrapeLane;
class WorkLane;
}  // namespace http

// API requests waiting or being answered at once; more are answered 503 with Retry-After.
inline constexpr size_t kApiJobs = 32;
// The API lane's nice value: answers for people yield the CPU to scrapes and the pipeline.
inline constexpr int kApiNice = 10;

class HttpServer {
 public:
  using Collect = std::function<void(core::MetricSet&)>;
  explicit HttpServer(Collect collect);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  explicit HttpServer(Collect collect, http::EndpointLimits limits);
  // Binds the address now, so a taken port is reported before any probe is loaded.
  // Throws std::runtime_error naming the address and the reason. Port 0 picks a free port.
  void bind(const core::ListenAddress& address);
  // Serves on a background thread until stop().
  void start();
  void stop();
  int port() const { return port_; }
  // The JSON API (configure() it before start()).
  api::Api& api() { return api_; }

  // What the endpoint answers to one request (method, path, Accept header): status, content
  // type and body. Public for the tests and the request-path fuzzer.
  // `path` is the request target as sent, query string included.
  using Reply = api::Reply;
  Reply answer(std::string_view method, std::string_view path, std::string_view accept) const;

 private:
  // Where a request is answered: /metrics on the scrape lane, the API on its lane, the rest
  // at once (on the I/O thread: a constant page or a short text).
  void route(const http::Request& request, http::Endpoint::Respond respond);
  // The endpoint's own families (connections, evictions, a busy API).
  void collect_endpoint(core::MetricSet& set) const;

  Collect collect_;
  http::EndpointLimits limits_;
  api::Api api_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::unique_ptr<http::ScrapeLane> scrape_lane_;
  std::unique_ptr<http::WorkLane> api_lane_;
  std::unique_ptr<http::Endpoint> endpoint_;
  std::atomic<uint64_t> api_busy_{0};
};

}  // namespace tailcause::exporter
