// SPDX-License-Identifier: Apache-2.0
// The circuit-breaker socket on a real Unix socket in a temporary directory: owner-only mode,
// answers, stale and live socket files, and clients that misbehave (random bytes, NULs, 10 KiB
// lines, half lines, 100 clients at once, a client that never reads, idle clients). After each
// misbehaviour a well-behaved client must still be answered.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/detect/breaker_protocol.h"
#include "export/breaker_socket.h"
#include "temp_dir.h"

namespace tailcause::exporter {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
constexpr uint64_t ms = 1'000'000;
constexpr auto kGenerous = 10s;  // a reply or a close takes far less, even on a loaded VM

using tailcause::testing::TempDir;

sockaddr_un address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  return addr;
}

// A test client: a blocking socket whose reads are bounded by poll().
struct Conn {
  int fd = -1;
  explicit Conn(const std::string& path) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = address(path);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ADD_FAILURE() << "connect " << path << ": " << std::strerror(errno);
    }
  }
  ~Conn() {
    if (fd >= 0) close(fd);
  }
  // false once the server has closed the connection.
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // The next line without "\n"; nullopt on EOF, reset or timeout.
  std::optional<std::string> line(std::chrono::milliseconds timeout = kGenerous) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return std::nullopt;
      }
      char ch;
      ssize_t n = recv(fd, &ch, 1, 0);
      if (n <= 0) return std::nullopt;
      if (ch == '\n') return out;
      out += ch;
    }
  }
  std::string ask(std::string_view request) {
    if (!send_all(request)) return "<send failed>";
    return line().value_or("<no reply>");
  }
  // True when the server closes within the timeout (EOF or reset, after any pending lines).
  bool closed_by_server(std::chrono::milliseconds timeout = kGenerous) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }
};

double metric(const BreakerSocket& s, const std::string& name, const core::Labels& labels = {}) {
  core::MetricSet set;
  s.collect(set);
  const core::Sample* sample = set.find(name, labels);
  return sample ? sample->value : -1;
}

// Waits (bounded) until a counter reaches `want`.
bool wait_metric(const BreakerSocket& s, const std::string& name, const core::Labels& labels,
                 double want) {
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(s, name, labels) >= want) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A real CircuitBreaker behind the provider, read at a fixed time: "acme"/"rag" is open.
struct BreakerSocketTest : ::testing::Test {
  TempDir dir;
  std::string path = (dir.path / "run" / "tailcause" / "breaker.sock").string();
  std::mutex mu;
  core::CircuitBreaker breaker;
  BreakerSocket::Provider provider = [this](const core::BreakerRequest& r) {
    std::lock_guard lock(mu);
    return core::answer_breaker_request(breaker, r, 10 * ms);
  };
  BreakerSocketTest() {
    for (uint64_t t = 1; t <= 3; t++) breaker.observe("acme", "rag", 500 * ms, t * ms);
  }
  void expect_still_serving(const BreakerSocket& s) {
    Conn good(s.path());
    EXPECT_EQ(good.ask("ping\n"), "ok pong");
    EXPECT_EQ(good.ask("state acme rag\n"), "ok open consecutive=3 retry_after_ms=29993");
  }
};

TEST_F(BreakerSocketTest, SocketFileIsOwnerOnlyAndAnswers) {
  const mode_t old = umask(0);  // a permissive umask must not leak into the socket's mode
  BreakerSocket s(path, provider);
  s.start();
  umask(old);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  ASSERT_EQ(stat(fs::path(path).parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // created, reachable by the agents' users

  Conn c(path);
  EXPECT_EQ(c.ask("ping\n"), "ok pong");
  EXPECT_EQ(c.ask("state acme rag\n"), "ok open consecutive=3 retry_after_ms=29993");
  EXPECT_EQ(c.ask("state acme other\r\n"), "ok closed consecutive=0 retry_after_ms=0");
  EXPECT_EQ(c.ask("list\n"), "open acme rag retry_after_ms=29993");
  EXPECT_EQ(c.line(), "end");
  // Pipelined requests in one write are answered in order.
  ASSERT_TRUE(c.send_all("ping\nstate acme rag\nping\n"));
  EXPECT_EQ(c.line(), "ok pong");
  EXPECT_EQ(c.line(), "ok open consecutive=3 retry_after_ms=29993");
  EXPECT_EQ(c.line(), "ok pong");
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_requests", {{"result", "ok"}}), 7);
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_requests", {{"result", "error"}}), 0);
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients"), 1);
}

TEST_F(BreakerSocketTest, GarbageGetsErrorsAndThreeErrorsClose) {
  BreakerSocket s(path, provider);
  s.start();
  {
    Conn c(path);
    EXPECT_EQ(c.ask("hello\n").rfind("error unknown_command", 0), 0u);
    EXPECT_EQ(c.ask(std::string("state a\0b c\n", 12)).rfind("error encoding", 0), 0u);
    EXPECT_EQ(c.ask("state \xff\xfe x\n").rfind("error not_utf8", 0), 0u);
    EXPECT_TRUE(c.closed_by_server());
  }
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients_closed", {{"reason", "errors"}}), 1);
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_errors", {{"kind", "not_utf8"}}), 1);
  // Good requests in between do not reset the count, but two errors alone do not close.
  {
    Conn c(path);
    EXPECT_EQ(c.ask("ping x\n").rfind("error arity", 0), 0u);
    EXPECT_EQ(c.ask("ping\n"), "ok pong");
    EXPECT_EQ(c.ask("state a%zz b\n").rfind("error encoding", 0), 0u);
    EXPECT_EQ(c.ask("ping\n"), "ok pong");
  }
  // Random bytes, NULs included, from several clients.
  std::mt19937 rng(1234);
  for (int i = 0; i < 20; i++) {
    Conn c(path);
    std::string junk(200 + rng() % 300, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng() % 256);
    c.send_all(junk + "\n");
    const auto reply = c.line();
    ASSERT_TRUE(reply) << "no reply to random bytes";
    EXPECT_EQ(reply->rfind("error ", 0), 0u) << *reply;
  }
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, OverLongLinesAreRefusedAndClosed) {
  BreakerSocket s(path, provider);
  s.start();
  {
    Conn c(path);  // 10 KiB with no newline at all
    c.send_all(std::string(10 * 1024, 'x'));
    EXPECT_EQ(c.line().value_or("").rfind("error too_long", 0), 0u);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    Conn c(path);  // 10 KiB ending in a newline, sent in one write
    c.send_all("state " + std::string(10 * 1024, 'y') + " z\n");
    EXPECT_EQ(c.line().value_or("").rfind("error too_long", 0), 0u);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    Conn c(path);  // exactly at the limit: 511 bytes and "\n" are fine
    std::string tenant(511 - 8, 't');
    EXPECT_EQ(c.ask("state " + tenant + " a\n"), "ok closed consecutive=0 retry_after_ms=0");
  }
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients_closed", {{"reason", "too_long"}}), 2);
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, HalfLinesAreJoinedOrTimedOut) {
  BreakerSocketLimits limits;
  limits.idle_timeout = 300ms;
  BreakerSocket s(path, provider, limits);
  s.start();
  {
    Conn c(path);  // one request over three writes
    for (const char* part : {"sta", "te ac", "me rag\n"}) {
      ASSERT_TRUE(c.send_all(part));
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(c.line(), "ok open consecutive=3 retry_after_ms=29993");
  }
  {
    Conn c(path);  // half a line, then the client shuts its side: told, then closed
    c.send_all("state acme");
    shutdown(c.fd, SHUT_WR);
    EXPECT_EQ(c.line().value_or("").rfind("error incomplete", 0), 0u);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    Conn c(path);  // half a line, then silence: closed as idle
    c.send_all("state acme r");
    EXPECT_TRUE(c.closed_by_server());
  }
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients_closed", {{"reason", "idle"}}), 1);
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_errors", {{"kind", "incomplete"}}), 1);
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, AHundredClientsAtOnce) {
  BreakerSocket s(path, provider);
  s.start();
  {
    std::vector<std::unique_ptr<Conn>> conns;
    for (int i = 0; i < 100; i++) conns.push_back(std::make_unique<Conn>(path));
    int pong = 0, busy = 0;
    for (auto& c : conns) {
      c->send_all("ping\n");  // a refused client may already be closed
      const std::string reply = c->line().value_or("<none>");
      if (reply == "ok pong")
        pong++;
      else if (reply.rfind("error busy", 0) == 0)
        busy++;
      else
        ADD_FAILURE() << reply;
    }
    EXPECT_EQ(pong, 64);
    EXPECT_EQ(busy, 36);
    EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients_refused"), 36);
    EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients"), 64);
  }
  // Once they are gone there is room again.
  EXPECT_TRUE(wait_metric(s, "tailcause_breaker_socket_requests", {{"result", "ok"}}, 64));
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  while (metric(s, "tailcause_breaker_socket_clients") > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_clients"), 0);
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, AClientThatNeverReadsIsDroppedWithoutStallingOthers) {
  {
    std::lock_guard lock(mu);  // many open breakers: each list reply is several KiB
    for (int i = 0; i < 200; i++) {
      for (uint64_t t = 1; t <= 3; t++) {
        breaker.observe("tenant-" + std::to_string(i), "agent-with-a-long-name", 500 * ms, t);
      }
    }
  }
  BreakerSocket s(path, provider);
  s.start();
  Conn hog(path);
  Conn good(path);
  size_t list_bytes = 0;  // the size of one list reply
  ASSERT_TRUE(good.send_all("list\n"));
  for (std::optional<std::string> line; (line = good.line()) && *line != "end";) {
    list_bytes += line->size() + 1;
  }
  ASSERT_GT(list_bytes, 8000u);
  bool dropped = false;
  int sent = 0;
  for (; sent < 1000 && !dropped; sent++) {
    if (!hog.send_all("list\n")) break;  // the server closed it: EPIPE
    // However much the hog has left unread, the server answers the others at once.
    ASSERT_EQ(good.ask("ping\n"), "ok pong") << "after " << sent << " unread list replies";
    dropped =
        metric(s, "tailcause_breaker_socket_clients_closed", {{"reason", "slow_reader"}}) >= 1;
  }
  EXPECT_TRUE(
      wait_metric(s, "tailcause_breaker_socket_clients_closed", {{"reason", "slow_reader"}}, 1));
  // Dropped for leaving more than 64 KiB unread (plus what the kernel buffers), not before.
  EXPECT_GT(sent * list_bytes, 64u * 1024) << sent << " list requests";
  EXPECT_TRUE(hog.closed_by_server());
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, AStaleSocketFileIsReplaced) {
  fs::create_directories(fs::path(path).parent_path());
  {
    // What a killed daemon leaves: a socket file nobody accepts on.
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr = address(path);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    close(fd);
  }
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  ASSERT_TRUE(S_ISSOCK(st.st_mode));
  BreakerSocket s(path, provider);
  ASSERT_NO_THROW(s.start());
  expect_still_serving(s);
}

TEST_F(BreakerSocketTest, ALiveSocketIsAClearErrorAndKeepsServing) {
  BreakerSocket first(path, provider);
  first.start();
  BreakerSocket second(path, provider);
  try {
    second.start();
    FAIL() << "a second socket started on a live path";
  } catch (const BreakerSocketError& e) {
    EXPECT_NE(std::string(e.what()).find("already answers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  second.stop();  // must not remove the first one's socket
  expect_still_serving(first);
}

TEST_F(BreakerSocketTest, APathThatIsNotASocketIsLeftAlone) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "not a socket\n";
  BreakerSocket s(path, provider);
  EXPECT_THROW(s.start(), BreakerSocketError);
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "not a socket");
}

TEST_F(BreakerSocketTest, StopClosesClientsAndRemovesTheFile) {
  BreakerSocket s(path, provider);
  s.start();
  Conn c(path);
  EXPECT_EQ(c.ask("ping\n"), "ok pong");
  s.stop();
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));
  s.stop();  // idempotent
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = address(path);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(errno, ENOENT);
  close(fd);
}

TEST_F(BreakerSocketTest, AFailingProviderIsAnInternalError) {
  BreakerSocket s(path, [](const core::BreakerRequest&) -> std::string {
    throw std::runtime_error("lock poisoned");
  });
  s.start();
  Conn c(path);
  for (int i = 0; i < 4; i++) {  // the daemon's fault: not counted against the client
    EXPECT_EQ(c.ask("state a b\n"), "error internal");
  }
  EXPECT_EQ(c.ask("ping\n"), "ok pong");
  EXPECT_EQ(metric(s, "tailcause_breaker_socket_errors", {{"kind", "internal"}}), 4);
}

TEST_F(BreakerSocketTest, BadPathsAreClearErrors) {
  BreakerSocket too_long(std::string(200, 'x'), provider);
  EXPECT_THROW(too_long.start(), BreakerSocketError);
  BreakerSocket empty("", provider);
  EXPECT_THROW(empty.start(), BreakerSocketError);
  std::ofstream(dir.path / "file") << "x";
  BreakerSocket under_a_file((dir.path / "file" / "breaker.sock").string(), provider);
  EXPECT_THROW(under_a_file.start(), BreakerSocketError);
}

TEST_F(BreakerSocketTest, AWorldWritableDirectoryIsRefusedAndLeftAsItIs) {
  const auto shared = dir.path / "shared";
  std::filesystem::create_directory(shared);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  BreakerSocket s((shared / "breaker.sock").string(), provider);
  try {
    s.start();
    FAIL() << "a mode 1777 directory was accepted";
  } catch (const BreakerSocketError& e) {
    EXPECT_NE(std::string(e.what()).find("mode 1777"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("writable by others"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(shared / "breaker.sock"));
  struct stat st {};
  ASSERT_EQ(stat(shared.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);  // not "repaired" behind its owner's back
  // Group-writable too; an owner-only one serves.
  ASSERT_EQ(chmod(shared.c_str(), 0775), 0);
  EXPECT_THROW(s.start(), BreakerSocketError);
  ASSERT_EQ(chmod(shared.c_str(), 0755), 0);
  EXPECT_NO_THROW(s.start());
}

}  // namespace
}  // namespace tailcause::exporter
