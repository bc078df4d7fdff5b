// SPDX-License-Identifier: Apache-2.0
#include "export/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/host/clock.h"
#include "export/exposition.h"
#include "export/http/scrape_lane.h"
#include "export/http/work_lane.h"
#include "core/record/schema.h"
#include "ui_page.h"  // generated from src/export/ui/ (kUiPage)

namespace tailcause::exporter {
namespace {

// The listening socket, bound and listening; throws naming the reason (EADDRINUSE...).
int listen_on(const core::ListenAddress& a, int& port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(a.port);
  if (int rc = getaddrinfo(a.host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{}: {}", a.host, a.port, gai_strerror(rc)));
  }
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  std::string reason;
  if (fd < 0) {
    reason = strerror(errno);
  } else {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      reason = strerror(errno);
    }
  }
  freeaddrinfo(res);
  if (!reason.empty()) {
    if (fd >= 0) close(fd);
    throw std::runtime_error(fmt::format("cannot listen on {}:{}: {}", a.host, a.port, reason));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  port = a.port;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return fd;
}

}  // namespace

HttpServer::HttpServer(Collect collect) : HttpServer(std::move(collect), http::EndpointLimits{}) {}

HttpServer::HttpServer(Collect collect, http::EndpointLimits limits)
    : collect_(std::move(collect)), limits_(limits), api_(collect_) {}

HttpServer::~HttpServer() {
  stop();
  if (listen_fd_ >= 0) close(listen_fd_);
}

HttpServer::Reply HttpServer::answer(std::string_view method, std::string_view path,
                                     std::string_view accept) const {
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain", "method not allowed: this endpoint is read-only\n"};
  }
  // The path without its query string.
  const size_t q = path.find('?');
  const std::string_view query = q == std::string_view::npos ? "" : path.substr(q + 1);
  path = path.substr(0, q);
  if (path == "/api/v1" || path.starts_with("/api/v1/")) {
    return api_.handle(path.substr(7), query, core::realtime_ns());
  }
  if (path == "/metrics") {
    core::MetricSet set;
    collect_(set);
    const Format format = negotiate(std::string(accept));
    return {200, std::string(content_type(format)), render(set, format)};
  }
  if (path == "/healthz") return {200, "text/plain", "ok\n"};
  if (path == "/") return {200, "text/html; charset=utf-8", std::string(kUiPage)};
  return {404, "text/plain", "not found\n"};
}

void HttpServer::bind(const core::ListenAddress& address) {
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = listen_on(address, port_);
}

void HttpServer::route(const http::Request& request, http::Endpoint::Respond respond) {
  const std::string_view target = request.target;
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/metrics") {
    const Format format = negotiate(request.accept);
    scrape_lane_->submit(format, [respond, format](std::string body) {
      respond({200, std::string(content_type(format)), std::move(body)});
    });
    return;
  }
  if (path == "/api/v1" || path.starts_with("/api/v1/")) {
    const bool taken = api_lane_->submit(
        [this, respond, target = request.target] { respond(answer("GET", target, "")); });
    if (!taken) {
      ++api_busy_;
      respond(api::error_reply(503, "the API is busy answering others; retry in a second"));
    }
    return;
  }
  respond(answer(request.method, request.target, request.accept));
}

void HttpServer::collect_endpoint(core::MetricSet& set) const {
  if (!endpoint_) return;
  using core::MetricType;
  const http::EndpointStats s = endpoint_->stats();
  set.add(core::metric::kHttpConnections, MetricType::Gauge,
          "Connections open to the HTTP endpoint.", {}, static_cast<double>(s.open));
  const char* help =
      "HTTP connections the endpoint closed before the client did, by reason: evicted (oldest "
      "idle or slow one, to make room), refused (no room), idle (no request within the idle "
      "timeout), timeout (a request or answer not done within it), bad_request.";
  for (const auto& [reason, n] : {std::pair{"evicted", s.evicted},
                                  {"refused", s.refused},
                                  {"idle", s.idle},
                                  {"timeout", s.timed_out},
                                  {"bad_request", s.bad_request}}) {
    set.add(core::metric::kHttpConnectionsClosed, MetricType::Counter, help, {{"reason", reason}},
            static_cast<double>(n));
  }
  set.add(core::metric::kHttpApiBusy, MetricType::Counter,
          "API requests answered 503 because the API lane was full.", {},
          static_cast<double>(api_busy_.load()));
}

void HttpServer::start() {
  if (listen_fd_ < 0) throw std::runtime_error("HttpServer::start() before bind()");
  if (endpoint_) return;
  api_.start();  // before the first request can ask it
  scrape_lane_ = std::make_unique<http::ScrapeLane>([this](core::MetricSet& set) {
    collect_(set);
    collect_endpoint(set);
  });
  api_lane_ = std::make_unique<http::WorkLane>(kApiJobs, kApiNice);
  const int fd = listen_fd_;
  listen_fd_ = -1;  // the endpoint owns it now
  endpoint_ = std::make_unique<http::Endpoint>(
      fd, limits_, [this](const http::Request& request, http::Endpoint::Respond respond) {
        route(request, std::move(respond));
      });
}

void HttpServer::stop() {
  // The I/O thread first (no new requests), then the lanes (what they hold is let go), then
  // the connections.
  if (endpoint_) endpoint_->stop();
  scrape_lane_.reset();
  api_lane_.reset();
  endpoint_.reset();
  api_.stop();
}

}  // namespace tailcause::exporter
