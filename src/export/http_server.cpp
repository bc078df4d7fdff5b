// SPDX-License-Identifier: Apache-2.0
#include "export/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/host/clock.h"
#include "export/exposition.h"
#include "ui_page.h"  // generated from src/export/ui/ (kUiPage)

namespace tailcause::exporter {
namespace {

// The page is self-contained: it may load nothing from elsewhere, and only talks to this origin.
constexpr const char* kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'";

// Per connection: the request target as sent (libmicrohttpd hands the handler the path without
// its query string) and whether the headers were seen (see on_request).
struct RequestState {
  std::string target;
  bool headers_seen = false;
};

void* on_uri(void*, const char* uri, MHD_Connection*) {
  auto* state = new RequestState;
  state->target = uri ? uri : "";
  return state;
}

void on_completed(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
  delete static_cast<RequestState*>(*state);
  *state = nullptr;
}

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
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 128) != 0) {
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

MHD_Result send_reply(MHD_Connection* connection, const HttpServer::Reply& reply) {
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
  if (!response) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
  if (reply.status == 405) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(response, "Content-Security-Policy", kPagePolicy);
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  // Generated content: no byte ranges (a Range header is ignored, the whole body is sent).
  MHD_add_response_header(response, MHD_HTTP_HEADER_ACCEPT_RANGES, "none");
  const MHD_Result rc = MHD_queue_response(connection, reply.status, response);
  MHD_destroy_response(response);
  return rc;
}

MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method,
                      const char* /*version*/, const char* /*upload_data*/,
                      size_t* upload_data_size, void** state) {
  const auto* server = static_cast<const HttpServer*>(cls);
  const bool read_only = std::strcmp(method, "GET") == 0 || std::strcmp(method, "HEAD") == 0;
  // libmicrohttpd calls once the headers are in, then again once the body is: answering on the
  // second call keeps the connection alive for the next (pipelined) request. Another method is
  // refused at once, its body unread, and libmicrohttpd then closes the connection.
  auto* request = static_cast<RequestState*>(*state);
  if (request && !request->headers_seen && read_only) {
    request->headers_seen = true;
    return MHD_YES;
  }
  *upload_data_size = 0;  // a GET with a body: answered now, the rest discarded with the connection
  const char* accept = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Accept");
  return send_reply(connection,
                    server->answer(method, request ? request->target : url, accept ? accept : ""));
}

void log_mhd(void*, const char* format, va_list ap) {
  char line[512];
  vsnprintf(line, sizeof line, format, ap);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  spdlog::debug("http: {}", text);
}

}  // namespace

HttpServer::HttpServer(Collect collect) : collect_(std::move(collect)), api_(collect_) {}

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

void HttpServer::start() {
  if (listen_fd_ < 0) throw std::runtime_error("HttpServer::start() before bind()");
  const HttpLimits& l = http_limits;
  api_.start();  // before the first request can ask it
  daemon_ = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &on_request, this,
      MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(listen_fd_), MHD_OPTION_CONNECTION_TIMEOUT,
      l.idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT, l.connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, l.per_address, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      l.connection_memory, MHD_OPTION_URI_LOG_CALLBACK, &on_uri, nullptr,
      MHD_OPTION_NOTIFY_COMPLETED, &on_completed, nullptr, MHD_OPTION_EXTERNAL_LOGGER, &log_mhd,
      nullptr, MHD_OPTION_END);
  if (!daemon_) {
    api_.stop();
    throw std::runtime_error("cannot start the HTTP server (libmicrohttpd)");
  }
}

void HttpServer::stop() {
  api_.stop();
  if (!daemon_) return;
  // MHD_stop_daemon closes the listening socket it was given.
  MHD_stop_daemon(daemon_);
  daemon_ = nullptr;
  listen_fd_ = -1;
}

}  // namespace tailcause::exporter
