// SPDX-License-Identifier: Apache-2.0
// tailcause_sdk_breaker_state() from libtailcause_sdk.so against a real BreakerSocket (the
// breaker_server test program), against no daemon, and against canned servers that answer
// garbage or nothing.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tailcause/sdk_lib.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct TempDir : tailcause::testing::TempDir {
  std::string socket() const { return (path / "breaker.sock").string(); }
};

// Points the client at `path` for the scope.
struct SocketEnv {
  explicit SocketEnv(const std::string& path) {
    setenv("TAILCAUSE_BREAKER_SOCKET", path.c_str(), 1);
  }
  ~SocketEnv() { unsetenv("TAILCAUSE_BREAKER_SOCKET"); }
};

// tests/testprogs/breaker_server serving `table` on `path`; stopped by closing its stdin.
struct ServerProcess {
  pid_t pid = -1;
  int to_child = -1;
  ServerProcess(const std::string& path, const std::vector<std::string>& table) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    std::vector<std::string> args = {TAILCAUSE_BREAKER_SERVER, path};
    args.insert(args.end(), table.begin(), table.end());
    pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_child = in[1];
    // Wait for "ready" (bounded).
    std::string got;
    pollfd p{out[0], POLLIN, 0};
    while (got.find("ready\n") == std::string::npos && poll(&p, 1, 10000) > 0) {
      char buf[64];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    if (got.find("ready\n") == std::string::npos)
      ADD_FAILURE() << "breaker_server did not start: " << got;
  }
  ~ServerProcess() {
    close(to_child);  // EOF on its stdin: it stops and exits
    int status = 0;
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++) {
      std::this_thread::sleep_for(10ms);
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "breaker_server did not exit on stdin EOF";
    }
  }
};

// Accepts connections on `path` and answers each with `reply` after reading one line (or, with
// `silent`, reads and never answers until the test ends).
struct CannedServer {
  int fd = -1;
  std::string reply;
  bool silent = false;
  std::string last_request;
  std::atomic<bool> done{false};
  std::thread thread;
  CannedServer(const std::string& path, std::string r, bool s = false)
      : reply(std::move(r)), silent(s) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 8) != 0) {
      throw std::runtime_error("canned server: bind/listen");
    }
    thread = std::thread([this] { serve(); });
  }
  void serve() {
    std::vector<int> held;
    while (!done) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int c = accept(fd, nullptr, nullptr);
      if (c < 0) continue;
      std::string got;
      char ch;
      pollfd q{c, POLLIN, 0};
      while (poll(&q, 1, 2000) > 0 && read(c, &ch, 1) == 1 && ch != '\n') got += ch;
      last_request = got;
      if (silent) {
        held.push_back(c);
        continue;
      }
      [[maybe_unused]] auto n = write(c, reply.data(), reply.size());
      close(c);
    }
    for (int c : held) close(c);
  }
  ~CannedServer() {
    done = true;
    thread.join();
    close(fd);
  }
};

TEST(BreakerSdkClient, ReadsStatesFromARealBreakerSocket) {
  TempDir dir;
  ServerProcess server(dir.socket(), {"acme",        "rag",    "open",   "3", "1500",  //
                                      "t%20x",       "%C3%BC", "closed", "2", "0",   // "t x", "ü"
                                      "a%25b%01%FF", "%",      "open",   "9", "17",  // odd bytes
                                      "huge",        "retry",  "open",   "4", "99999999999"});
  SocketEnv env(dir.socket());
  uint32_t retry = 77;
  EXPECT_EQ(tailcause_sdk_breaker_state("acme", "rag", &retry), 1);
  EXPECT_EQ(retry, 1500u);
  EXPECT_EQ(tailcause_sdk_breaker_state("t x", "\xc3\xbc", &retry), 0);
  EXPECT_EQ(retry, 0u);
  EXPECT_EQ(tailcause_sdk_breaker_state("a%b\x01\xff", "", &retry), 1);
  EXPECT_EQ(retry, 17u);
  EXPECT_EQ(tailcause_sdk_breaker_state("huge", "retry", &retry), 1);
  EXPECT_EQ(retry, UINT32_MAX);  // clamped
  retry = 77;
  EXPECT_EQ(tailcause_sdk_breaker_state("acme", "other", &retry), 0);  // never seen: closed
  EXPECT_EQ(retry, 0u);
  EXPECT_EQ(tailcause_sdk_breaker_state("acme", "rag", nullptr), 1);  // retry is optional
  errno = 4242;
  tailcause_sdk_breaker_state("acme", "rag", nullptr);
  EXPECT_EQ(errno, 4242);  // the caller's errno is kept
}

TEST(BreakerSdkClient, IsSafeFromManyThreads) {
  TempDir dir;
  ServerProcess server(dir.socket(), {"acme", "rag", "open", "3", "1500"});
  SocketEnv env(dir.socket());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; i++) {
        uint32_t retry = 0;
        const bool open = (i + t) % 2 == 0;
        int rc = tailcause_sdk_breaker_state("acme", open ? "rag" : "chat", &retry);
        // A loaded VM may exceed 100 ms now and then: only a wrong answer is a failure.
        if (rc == -ETIMEDOUT) continue;
        if (rc != (open ? 1 : 0) || retry != (open ? 1500u : 0u)) wrong++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
}

// The state as another user (nobody) reads it: what the client returns, as an exit status.
int state_as_nobody() {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(200);
    int rc = tailcause_sdk_breaker_state("acme", "rag", nullptr);
    _exit(rc < 0 ? 100 - rc : rc);  // 0 closed, 1 open, 100 + errno
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(BreakerSdkClient, OtherUsersAreRefusedByTheSocketsMode) {
  if (geteuid() != 0) GTEST_SKIP() << "switching to another user needs root";
  TempDir dir;
  chmod(dir.path.c_str(), 0755);  // only the socket's own mode may keep others out
  ServerProcess server(dir.socket(), {"acme", "rag", "open", "3", "1500"});
  SocketEnv env(dir.socket());
  EXPECT_EQ(tailcause_sdk_breaker_state("acme", "rag", nullptr), 1);  // the owner
  EXPECT_EQ(state_as_nobody(), 100 + EACCES);
  // The control: with the mode opened up, the same user gets through.
  ASSERT_EQ(chmod(dir.socket().c_str(), 0666), 0);
  EXPECT_EQ(state_as_nobody(), 1);
}

TEST(BreakerSdkClient, ABusyDaemonIsEBUSY) {
  TempDir dir;
  ServerProcess server(dir.socket(), {"acme", "rag", "open", "3", "1500"});
  SocketEnv env(dir.socket());
  std::vector<int> held;  // the socket's 64 clients, connected first so accepted first
  for (int i = 0; i < 64; i++) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, dir.socket().c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    held.push_back(fd);
  }
  // Whether the refusal beats the request or not, the answer is the same.
  int busy = 0;
  for (int i = 0; i < 20; i++) {
    int rc = tailcause_sdk_breaker_state("acme", "rag", nullptr);
    EXPECT_TRUE(rc == -EBUSY || rc == -ETIMEDOUT) << rc;  // a loaded VM may exceed 100 ms
    busy += rc == -EBUSY;
  }
  EXPECT_GT(busy, 0);
  for (int fd : held) close(fd);
}

TEST(BreakerSdkClient, NoDaemonIsENOENTOrECONNREFUSED) {
  TempDir dir;
  {
    SocketEnv env(dir.socket());  // nothing there
    EXPECT_EQ(tailcause_sdk_breaker_state("a", "b", nullptr), -ENOENT);
  }
  // A stale socket file left by a killed daemon.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, dir.socket().c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  SocketEnv env(dir.socket());
  EXPECT_EQ(tailcause_sdk_breaker_state("a", "b", nullptr), -ECONNREFUSED);
}

TEST(BreakerSdkClient, ASilentDaemonTimesOutQuickly) {
  TempDir dir;
  CannedServer server(dir.socket(), "", /*silent=*/true);
  SocketEnv env(dir.socket());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(tailcause_sdk_breaker_state("a", "b", nullptr), -ETIMEDOUT);
  // The deadline is 100 ms; allow a loaded VM plenty more, but not a hang.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(BreakerSdkClient, BadRepliesAreEPROTO) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"garbage\n", -EPROTO},
      {"ok open consecutive=1\n", -EPROTO},
      {"ok open consecutive=1 retry_after_ms=5", -EPROTO},  // no "\n" before the close
      {"ok maybe consecutive=1 retry_after_ms=5\n", -EPROTO},
      {"ok open consecutive=1 retry_after_ms=5x\n", -EPROTO},
      {"ok open consecutive=99999999999999999999 retry_after_ms=5\n", -EPROTO},
      {std::string(600, 'x') + "\n", -EPROTO},
      {"", -EPROTO},  // closed without a word
      {"error unknown_command\n", -EPROTO},
      {"error busy 64 clients connected\n", -EBUSY},
      {"ok closed consecutive=0 retry_after_ms=0\nextra\n", 0},
  };
  for (const auto& [reply, want] : cases) {
    TempDir dir;
    CannedServer server(dir.socket(), reply);
    SocketEnv env(dir.socket());
    int rc = tailcause_sdk_breaker_state("a b%", "\xc3\xbc\n", nullptr);
    EXPECT_EQ(rc, want) << reply.substr(0, 60);
    if (rc != -ETIMEDOUT) {
      EXPECT_EQ(server.last_request, "state a%20b%25 %C3%BC%0A");  // what went on the wire
    }
  }
}

TEST(BreakerSdkClient, ReadsACachesStateAndRefusesBadReplies) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"ok breakdown competition_permille=952 miss_permille=1000 lookups=40\n", 1},
      {"ok healthy competition_permille=2 miss_permille=50 lookups=12345678901\n", 0},
      {"ok healthy competition_permille=1001 miss_permille=50 lookups=1\n", -EPROTO},
      {"ok healthy competition_permille=1 miss_permille=1001 lookups=1\n", -EPROTO},
      {"ok healthy competition_permille=1 miss_permille=1\n", -EPROTO},
      {"ok healthy competition_permille=1 miss_permille=1 lookups=1 x\n", -EPROTO},
      {"ok closed consecutive=0 retry_after_ms=0\n", -EPROTO},
      {"error busy\n", -EBUSY},
      {"error unknown_command command \"cache\"\n", -EPROTO},  // an older daemon
  };
  for (const auto& [reply, want] : cases) {
    TempDir dir;
    CannedServer server(dir.socket(), reply);
    SocketEnv env(dir.socket());
    tailcause_sdk_cache_view view{7, 7, 7};
    const int rc = tailcause_sdk_cache_state("t a", "retrieval", &view);
    EXPECT_EQ(rc, want) << reply;
    if (rc == -ETIMEDOUT) continue;  // a loaded VM may exceed 100 ms
    EXPECT_EQ(server.last_request, "cache t%20a retrieval");
    if (want == 1) {
      EXPECT_EQ(view.competition_permille, 952u);
      EXPECT_EQ(view.miss_permille, 1000u);
      EXPECT_EQ(view.lookups, 40u);
    } else if (want == 0) {
      EXPECT_EQ(view.lookups, 12345678901u);
    } else {
      EXPECT_EQ(view.lookups, 7u);  // untouched on an error
    }
  }
  TempDir dir;
  SocketEnv env(dir.socket());
  EXPECT_EQ(tailcause_sdk_cache_state("a", "b", nullptr), -ENOENT);
  EXPECT_EQ(tailcause_sdk_cache_state(nullptr, "b", nullptr), -EINVAL);
  EXPECT_EQ(tailcause_sdk_cache_state("a", nullptr, nullptr), -EINVAL);
}

TEST(BreakerSdkClient, BadArgumentsAreRefusedBeforeConnecting) {
  TempDir dir;
  SocketEnv env(dir.socket());
  EXPECT_EQ(tailcause_sdk_breaker_state(nullptr, "b", nullptr), -EINVAL);
  EXPECT_EQ(tailcause_sdk_breaker_state("a", nullptr, nullptr), -EINVAL);
  const std::string long_tenant(300, '%');  // 900 bytes encoded
  EXPECT_EQ(tailcause_sdk_breaker_state(long_tenant.c_str(), "b", nullptr), -ENAMETOOLONG);
  const std::string long_path = "/tmp/" + std::string(200, 'p');
  SocketEnv long_env(long_path);
  EXPECT_EQ(tailcause_sdk_breaker_state("a", "b", nullptr), -ENAMETOOLONG);
}

}  // namespace
