// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the HTTP request path. Each input is sent as raw bytes to a real HttpServer
// (libmicrohttpd, the daemon's limits) on a loopback port and the reply read back; it must stay
// small (no range or pipelining amplification) and the server must not crash. The input's
// first line is also fed to HttpServer::answer() as method, path and Accept header.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "export/http_server.h"

namespace {

using tailcause::exporter::HttpServer;

HttpServer& server() {
  static HttpServer* s = [] {
    // libFuzzer ends with exit(): static destructors then free spdlog's logger while the
    // server's thread may still be logging a connection. Create the logger first, then stop the
    // server at exit: atexit handlers run before the destructors of statics made before them.
    spdlog::default_logger();
    auto* srv = new HttpServer([](tailcause::core::MetricSet& set) {
      set.add("fuzz_requests", tailcause::core::MetricType::Counter, "Requests.", {{"a", "b"}}, 1);
    });
    srv->bind({"127.0.0.1", 0});
    srv->start();
    std::atexit([] { server().stop(); });
    return srv;
  }();
  return *s;
}

// Sends `request`, half-closes, and returns how many bytes came back before the server closed.
size_t round_trip(std::string_view request) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server().port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Closed with a reset: thousands of exchanges a second would otherwise use up the ephemeral
  // ports in TIME_WAIT.
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect to the HTTP server");
    std::abort();
  }
  size_t received = 0;
  char buf[65536];
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early (a refused request): fine
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    // A silent pause of 100 ms ends the exchange: the server has answered what it will, and
    // keeps a keep-alive or half-sent request open until its idle timeout (10 s), which the unit
    // and end-to-end tests cover; waiting for it here would make a run a few inputs a second.
    if (poll(&p, 1, 100) == 0) break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    received += static_cast<size_t>(n);
  }
  close(fd);
  return received;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // "METHOD PATH\nACCEPT..." straight into the handler.
  const auto line_end = text.find('\n');
  const std::string_view line = text.substr(0, line_end);
  const std::string_view accept =
      line_end == std::string_view::npos ? "" : text.substr(line_end + 1);
  const auto space = line.find(' ');
  const auto reply = server().answer(
      line.substr(0, space), space == std::string_view::npos ? "" : line.substr(space + 1), accept);
  // 400: a bad query to the JSON API (/api/v1/...).
  if (reply.status != 200 && reply.status != 400 && reply.status != 404 && reply.status != 405)
    std::abort();

  // The whole input as a request. Every reply but the page (/) is a few KB at most; even a
  // request per 16 input bytes (pipelined) cannot legitimately ask for more than this.
  static const size_t page = server().answer("GET", "/", "").body.size();
  const size_t bound = 4096 + (size / 16 + 1) * (page + 4096);
  if (const size_t got = round_trip(text); got > bound) {
    std::fprintf(stderr, "%zu bytes of request got %zu bytes back (bound %zu)\n", size, got, bound);
    std::abort();
  }
  return 0;
}
