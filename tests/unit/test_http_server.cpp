// SPDX-License-Identifier: Apache-2.0
// The HTTP endpoint on a real loopback socket, fed hostile requests byte for byte: other
// methods, thousands of ranges, a megabyte of headers, pipelining, idle and slow clients.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "export/http_server.h"

namespace tailcause::exporter {
namespace {

// A connected client socket from `source` (any 127.0.0.0/8 address) to the server's port.
int connect_to(int port, const char* source = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << strerror(errno);
  return fd;
}

// Everything the server sends until it closes; a server that stays silent for 10 s (its idle
// timeout is 10 s, and these requests are answered at once) ends the read and fails the test.
std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) {
      ADD_FAILURE() << "no answer and no close within 10 s; got so far: " << out.substr(0, 200);
      break;
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends `request` whole (the server may close early on a refused one) and reads to the close.
std::string round_trip(int port, const std::string& request) {
  const int fd = connect_to(port);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string reply = read_all(fd);
  close(fd);
  return reply;
}

std::string get_request(const std::string& path, const std::string& headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + headers + "Connection: close\r\n\r\n";
}

int status_of(const std::string& reply) {
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12) return 0;
  return std::stoi(reply.substr(9, 3));
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server.bind({"127.0.0.1", 0});
    server.start();
    port = server.port();
    ASSERT_GT(port, 0);
  }
  HttpServer server{[](core::MetricSet& set) {
    for (int i = 0; i < 50; ++i) {
      set.add("tailcause_test_value", core::MetricType::Gauge, "A value.",
              {{"n", std::to_string(i)}}, i);
    }
  }};
  int port = 0;
};

TEST_F(HttpServerTest, ServesMetricsHealthAndIndex) {
  const std::string metrics = round_trip(port, get_request("/metrics"));
  EXPECT_EQ(status_of(metrics), 200) << metrics.substr(0, 200);
  EXPECT_NE(metrics.find("tailcause_test_value{n=\"49\"} 49"), std::string::npos);
  EXPECT_EQ(status_of(round_trip(port, get_request("/healthz"))), 200);
  EXPECT_EQ(status_of(round_trip(port, get_request("/"))), 200);
  EXPECT_EQ(status_of(round_trip(port, get_request("/nope"))), 404);
  const std::string head =
      round_trip(port, "HEAD /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(head), 200);
  EXPECT_EQ(head.find("tailcause_test_value"), std::string::npos);  // headers only
}

TEST_F(HttpServerTest, EveryOtherMethodIs405WithAllow) {
  for (const char* method : {"OPTIONS", "TRACE", "PUT", "POST", "DELETE", "PATCH", "BREW"}) {
    const std::string reply =
        round_trip(port, std::string(method) +
                             " /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
                             "Connection: close\r\n\r\nabc");
    EXPECT_EQ(status_of(reply), 405) << method << ": " << reply.substr(0, 200);
    EXPECT_NE(reply.find("Allow: GET, HEAD"), std::string::npos) << method;
  }
}

TEST_F(HttpServerTest, ThousandsOfRangesGetTheBodyOnce) {
  const std::string plain = round_trip(port, get_request("/metrics"));
  std::string ranges = "Range: bytes=0-";
  for (int i = 0; i < 2700; ++i) ranges += ",0-";
  const std::string reply = round_trip(port, get_request("/metrics", ranges + "\r\n"));
  EXPECT_EQ(status_of(reply), 200) << reply.substr(0, 200);  // not 206 multipart
  EXPECT_EQ(count(reply, "tailcause_test_value{n=\"0\"}"), 1u);
  EXPECT_LT(reply.size(), plain.size() + 200);  // cpp-httplib sent 312 MB for this
}

TEST_F(HttpServerTest, AMegabyteOfHeadersIsRefused) {
  std::string headers;
  while (headers.size() < 1024 * 1024) headers += "X-Pad: " + std::string(1000, 'a') + "\r\n";
  const std::string reply = round_trip(port, get_request("/metrics", headers));
  EXPECT_EQ(status_of(reply), 431) << reply.substr(0, 200);
  EXPECT_EQ(status_of(round_trip(port, get_request("/healthz"))), 200);
}

TEST_F(HttpServerTest, PipelinedRequestsAreEachAnswered) {
  const std::string keep = "Host: t\r\n\r\n";
  const std::string reply =
      round_trip(port, "GET /healthz HTTP/1.1\r\n" + keep + "GET /metrics HTTP/1.1\r\n" + keep +
                           "HEAD / HTTP/1.1\r\n" + keep + get_request("/"));
  EXPECT_EQ(count(reply, "HTTP/1.1 200"), 4u) << reply.substr(0, 400);
}

// A refused request in a pipeline is answered, then the connection closed: never a reply
// that belongs to another request.
TEST_F(HttpServerTest, ARefusedRequestInAPipelineClosesCleanly) {
  const std::string keep = "Host: t\r\n\r\n";
  const std::string reply = round_trip(port, "GET /healthz HTTP/1.1\r\n" + keep +
                                                 "PUT / HTTP/1.1\r\nContent-Length: 5\r\n" + keep +
                                                 "hello" + get_request("/"));
  EXPECT_EQ(count(reply, "HTTP/1.1 "), 2u) << reply.substr(0, 400);
  EXPECT_EQ(reply.rfind("HTTP/1.1 405"), reply.rfind("HTTP/1.1 ")) << reply.substr(0, 400);
  EXPECT_NE(reply.find("Connection: close", reply.rfind("HTTP/1.1 405")), std::string::npos);
}

// 200 connections that send nothing, or half a request, from one address: the per-address
// limit refuses most, the rest cost a descriptor each, and a scrape from elsewhere is answered.
TEST_F(HttpServerTest, IdleAndSlowClientsDoNotBlockAScrape) {
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_to(port, "127.0.0.2");
    if (i % 2) send(fd, "GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n", 35, MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  const std::string reply = round_trip(port, get_request("/metrics"));
  EXPECT_EQ(status_of(reply), 200) << reply.substr(0, 200);
  EXPECT_NE(reply.find("tailcause_test_value"), std::string::npos);
  for (int fd : idle) close(fd);
}

// A scraper that shares its address with 32 idle or half-sent connections (the per-address
// limit) gets in: the oldest of them gives way.
TEST_F(HttpServerTest, IdleConnectionsFromTheScrapersOwnAddressGiveWay) {
  std::vector<int> idle;
  for (int i = 0; i < 40; ++i) {
    const int fd = connect_to(port, "127.0.0.1");
    if (i % 2) send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  for (int scrape = 0; scrape < 5; ++scrape) {
    const std::string reply = round_trip(port, get_request("/metrics"));
    EXPECT_EQ(status_of(reply), 200) << reply.substr(0, 200);
  }
  const std::string metrics = round_trip(port, get_request("/metrics"));
  EXPECT_NE(metrics.find("tailcause_http_connections_closed_total{reason=\"evicted\"}"),
            std::string::npos);
  for (int fd : idle) close(fd);
}

// 300 idle connections spread over 127.0.0.2-255 fill every slot; scrapes still get in.
TEST_F(HttpServerTest, IdleConnectionsFromManyAddressesGiveWay) {
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const std::string source = "127.0.0." + std::to_string(2 + i % 254);
    idle.push_back(connect_to(port, source.c_str()));
  }
  for (int scrape = 0; scrape < 5; ++scrape) {
    const std::string reply = round_trip(port, get_request("/metrics"));
    EXPECT_EQ(status_of(reply), 200) << reply.substr(0, 200);
    EXPECT_NE(reply.find("tailcause_test_value"), std::string::npos);
  }
  for (int fd : idle) close(fd);
}

TEST_F(HttpServerTest, AThousandEmptyParametersAreAnswered) {
  const std::string reply = round_trip(port, get_request("/metrics?" + std::string(1000, '&')));
  EXPECT_EQ(status_of(reply), 200) << reply.substr(0, 200);
  const std::string api = round_trip(port, get_request("/api/v1/stages?" + std::string(1000, '&')));
  EXPECT_EQ(status_of(api), 200) << api.substr(0, 300);  // empty parameters are no parameters
}

TEST_F(HttpServerTest, ABodyOnGetOrHeadIsA400) {
  for (const char* method : {"GET", "HEAD"}) {
    const std::string reply =
        round_trip(port, std::string(method) +
                             " /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(status_of(reply), 400) << method << ": " << reply.substr(0, 200);
    EXPECT_NE(reply.find("Connection: close"), std::string::npos) << method;
  }
}

// A request dripped a header line at a time is closed at the idle timeout after its start,
// however often it sends.
TEST(HttpServer, ADrippedRequestIsClosedAtTheTimeout) {
  http::EndpointLimits limits;
  limits.idle_timeout_s = 1;
  HttpServer server([](core::MetricSet&) {}, limits);
  server.bind({"127.0.0.1", 0});
  server.start();
  const int fd = connect_to(server.port());
  send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
  bool closed = false;
  for (int i = 0; i < 50 && !closed; ++i) {  // 5 s of a header line every 100 ms
    closed = send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0;
    pollfd p{fd, POLLIN, 0};
    if (!closed && poll(&p, 1, 100) == 1) {
      char c;
      closed = recv(fd, &c, 1, 0) <= 0;
    }
  }
  EXPECT_TRUE(closed) << "a request dripped for 5 s was not closed (timeout: 1 s)";
  close(fd);
  const std::string metrics = round_trip(server.port(), get_request("/metrics"));
  EXPECT_NE(metrics.find("tailcause_http_connections_closed_total{reason=\"timeout\"} 1"),
            std::string::npos)
      << metrics;
}

TEST(HttpServer, ATakenPortIsAClearError) {
  HttpServer first([](core::MetricSet&) {});
  first.bind({"127.0.0.1", 0});
  HttpServer second([](core::MetricSet&) {});
  try {
    second.bind({"127.0.0.1", static_cast<uint16_t>(first.port())});
    FAIL() << "bound a taken port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Address already in use"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tailcause::exporter
