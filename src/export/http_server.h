// SPDX-License-Identifier: Apache-2.0
// The read-only HTTP endpoint, a thin router: /metrics (Prometheus text or OpenMetrics by Accept
// header), / (the web UI, embedded at build time from src/export/ui/), /api/v1/ (the JSON API,
// export/api/), /healthz. Anything that changes behaviour goes elsewhere (local socket).
//
// Anyone who can reach the port can talk to it, so it must not be switched off or swollen by a
// client: libmicrohttpd serves it from one epoll thread (an idle or slow connection costs a
// file descriptor, never a worker), with a per-connection memory cap (request line and headers),
// an idle timeout, and total and per-address connection limits (http_limits below).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/config/config.h"
#include "core/record/metrics.h"
#include "export/api/api.h"

struct MHD_Daemon;

namespace tailcause::exporter {

// Fixed limits of the endpoint; a scrape is one small GET.
struct HttpLimits {
  unsigned idle_timeout_s = 10;      // a connection silent this long is closed
  unsigned connections = 256;        // open connections, all clients together
  unsigned per_address = 32;         // open connections from one client address
  size_t connection_memory = 32768;  // request line + headers; more is answered 431
};
inline constexpr HttpLimits http_limits{};

class HttpServer {
 public:
  using Collect = std::function<void(core::MetricSet&)>;
  explicit HttpServer(Collect collect);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

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
  Collect collect_;
  api::Api api_;
  int listen_fd_ = -1;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace tailcause::exporter
