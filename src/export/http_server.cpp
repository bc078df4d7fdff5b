#include "export/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>

#include "export/exposition.h"

namespace tailcause::exporter {
namespace {

// httplib reports a failed bind without a reason; one plain bind() names it (EADDRINUSE...).
std::string bind_error(const core::ListenAddress& a) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(a.port);
  if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return gai_strerror(rc);
  }
  std::string reason = "unknown error";
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      reason = strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(res);
  return reason;
}

constexpr const char* kIndex =
    "<!doctype html><title>tailcause</title><h1>tailcause</h1>"
    "<p>Kernel causes of AI-agent tail latency.</p><p><a href=\"/metrics\">/metrics</a></p>\n";

}  // namespace

HttpServer::HttpServer(Collect collect)
    : collect_(std::move(collect)), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    core::MetricSet set;
    collect_(set);
    const Format format = negotiate(req.get_header_value("Accept"));
    res.set_content(render(set, format), std::string(content_type(format)));
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kIndex, "text/html; charset=utf-8");
  });
  // Read-only endpoint: every other method is refused.
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed: this endpoint is read-only\n", "text/plain");
  };
  server_->Post(".*", refuse);
  server_->Put(".*", refuse);
  server_->Delete(".*", refuse);
  server_->Patch(".*", refuse);
  server_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found\n", "text/plain");
  });
  server_->set_payload_max_length(64 * 1024);
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::bind(const core::ListenAddress& address) {
  if (!server_->bind_to_port(address.host.c_str(), address.port)) {
    throw std::runtime_error(fmt::format("cannot listen on {}:{}: {}", address.host, address.port,
                                         bind_error(address)));
  }
  port_ = address.port;
}

void HttpServer::start() {
  auto ended = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, ended] {
    server_->listen_after_bind();
    *ended = true;
  });
  // httplib's stop() does nothing until the accept loop runs (and that loop would then never
  // end): wait for it, so that a stop() right after start() cannot hang.
  while (!server_->is_running() && !*ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tailcause::exporter
