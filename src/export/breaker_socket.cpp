// SPDX-License-Identifier: Apache-2.0
#include "export/breaker_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/record/schema.h"

namespace tailcause::exporter {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct BreakerSocket::Client {
  int fd = -1;
  std::string in;   // bytes of a request line not yet ended by "\n"
  std::string out;  // reply bytes not yet sent, from out_sent on
  size_t out_sent = 0;
  uint32_t errors = 0;
  bool eof = false;  // the client shut down its side: flush, then close
  Clock::time_point last_activity;

  size_t pending() const { return out.size() - out_sent; }
};

namespace {

constexpr size_t kReadChunk = 4096;
constexpr int kBacklog = 128;

std::string errno_text(int err) { return std::system_category().message(err); }

sockaddr_un socket_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// 0 when something accepts connections on `path`, else the errno of connect().
int probe_socket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_un addr = socket_address(path);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = rc == 0 ? 0 : errno;
  close(fd);
  return err;
}

void ensure_directory(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) return;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    // Anyone who can write the directory can swap the socket for their own (agents would then
    // trust a stranger's verdicts) or plant files in root's way: only the daemon's user may.
    // Not repaired: chmod on a shared directory (/tmp) would break its other users.
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
      throw BreakerSocketError(fmt::format("breaker socket {}: cannot inspect directory {}: {}",
                                           path, dir.string(), strerror(errno)));
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_uid != geteuid()) {
      throw BreakerSocketError(fmt::format(
          "breaker socket {}: directory {} (mode {:04o}, owner uid {}) is writable by others or "
          "not owned by uid {}; use a directory only the daemon can write (chmod 0755, owner "
          "root), or set breaker.socket to a path in one",
          path, dir.string(), st.st_mode & 07777, st.st_uid, geteuid()));
    }
    return;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    throw BreakerSocketError(fmt::format("breaker socket {}: cannot create directory {}: {}", path,
                                         dir.string(), ec.message()));
  }
  chmod(dir.c_str(), 0755);  // whatever the umask: agents must reach the socket inside
}

// A socket file left at `path` by a daemon that is gone is removed; anything else there (a
// file, a live daemon's socket) is an error.
void remove_stale_socket(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw BreakerSocketError(fmt::format("breaker socket {}: {}", path, errno_text(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    throw BreakerSocketError(
        fmt::format("breaker socket {}: the path exists and is not a socket; remove it or set "
                    "breaker.socket to another path",
                    path));
  }
  int err = probe_socket(path);
  if (err == 0) {
    throw BreakerSocketError(fmt::format(
        "breaker socket {}: another process (an tailcause daemon?) already answers there; "
        "stop it or set breaker.socket to another path",
        path));
  }
  if (err != ECONNREFUSED) {
    throw BreakerSocketError(fmt::format("breaker socket {}: cannot check the existing socket: {}",
                                         path, errno_text(err)));
  }
  spdlog::info("breaker socket {}: replacing a stale socket file", path);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw BreakerSocketError(fmt::format("breaker socket {}: cannot remove the stale socket: {}",
                                         path, errno_text(errno)));
  }
}

}  // namespace

BreakerSocket::BreakerSocket(std::string path, Provider provider, BreakerSocketLimits limits)
    : path_(std::move(path)), provider_(std::move(provider)), limits_(limits) {}

BreakerSocket::~BreakerSocket() { stop(); }

void BreakerSocket::bind_socket() {
  if (path_.empty()) throw BreakerSocketError("breaker socket: empty path");
  if (path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw BreakerSocketError(fmt::format("breaker socket {}: path longer than {} bytes", path_,
                                         sizeof(sockaddr_un{}.sun_path) - 1));
  }
  ensure_directory(path_);
  remove_stale_socket(path_);

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw BreakerSocketError(
        fmt::format("breaker socket {}: socket(): {}", path_, errno_text(errno)));
  }
  sockaddr_un addr = socket_address(path_);
  // The socket file is created with the umask applied: make it owner-only from the start.
  mode_t old_mask = umask(0177);
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  umask(old_mask);
  if (rc != 0) {
    close(fd);
    throw BreakerSocketError(fmt::format("breaker socket {}: bind(): {}", path_, errno_text(err)));
  }
  if (group_ && chown(path_.c_str(), static_cast<uid_t>(-1), *group_) != 0) {
    err = errno;
    close(fd);
    unlink(path_.c_str());
    throw BreakerSocketError(fmt::format(
        "breaker socket {}: cannot give it to group {}: {} (the daemon must be a member of the "
        "group, or have CAP_CHOWN)",
        path_, *group_, errno_text(err)));
  }
  struct stat st {};
  if (chmod(path_.c_str(), mode_) != 0 || listen(fd, kBacklog) != 0 ||
      lstat(path_.c_str(), &st) != 0) {
    err = errno;
    close(fd);
    unlink(path_.c_str());
    throw BreakerSocketError(fmt::format("breaker socket {}: {}", path_, errno_text(err)));
  }
  listen_fd_ = fd;
  socket_dev_ = st.st_dev;
  socket_ino_ = st.st_ino;
}

void BreakerSocket::start() {
  if (thread_.joinable()) throw BreakerSocketError("breaker socket: already started");
  bind_socket();
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int err = errno;
    stop();
    throw BreakerSocketError(fmt::format("breaker socket: eventfd(): {}", errno_text(err)));
  }
  thread_ = std::thread([this] { run(); });
  spdlog::info("breaker socket listening on {}", path_);
}

void BreakerSocket::stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof one) < 0)
      spdlog::warn("breaker socket: cannot wake its thread");
    thread_.join();
  }
  for (auto& c : clients_) close_client(*c, std::nullopt);
  clients_.clear();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    // Another daemon may have replaced the file meanwhile: remove only the one we bound.
    struct stat st {};
    if (lstat(path_.c_str(), &st) == 0 && st.st_dev == socket_dev_ && st.st_ino == socket_ino_) {
      unlink(path_.c_str());
    }
  }
}

void BreakerSocket::run() {
  std::vector<pollfd> fds;
  while (true) {
    const auto now = Clock::now();
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({now >= accept_paused_until_ ? listen_fd_ : -1, POLLIN, 0});
    int timeout_ms = now >= accept_paused_until_ ? -1 : 100;
    for (const auto& c : clients_) {
      short events = (c->eof ? 0 : POLLIN) | (c->pending() ? POLLOUT : 0);
      fds.push_back({c->fd, events, 0});
      auto left = std::chrono::ceil<std::chrono::milliseconds>(c->last_activity +
                                                               limits_.idle_timeout - now)
                      .count();
      left = std::max<int64_t>(left, 0);
      if (timeout_ms < 0 || left < timeout_ms) timeout_ms = static_cast<int>(left);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("breaker socket: poll(): {}; no longer serving {}", errno_text(errno), path_);
      break;
    }
    if (fds[0].revents) break;  // stop()

    // Clients first: fds[2..] match clients_ as it was before accept_clients() adds to it.
    for (size_t i = 0; i < clients_.size() && i + 2 < fds.size(); i++) {
      Client& c = *clients_[i];
      const short rev = fds[i + 2].revents;
      if (c.fd < 0 || rev == 0) continue;
      if (rev & POLLOUT) flush(c);
      if (c.fd >= 0 && (rev & (POLLIN | POLLHUP | POLLERR))) read_from(c);
    }
    if (fds[1].revents) accept_clients();

    const auto after = Clock::now();
    for (auto& c : clients_) {
      if (c->fd >= 0 && after - c->last_activity >= limits_.idle_timeout) {
        close_client(*c, CloseReason::idle);
      }
    }
    std::erase_if(clients_, [](const auto& c) { return c->fd < 0; });
  }
  for (auto& c : clients_) close_client(*c, std::nullopt);
  clients_.clear();
}

void BreakerSocket::accept_clients() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // Out of descriptors: the listening socket stays readable, so pause instead of spinning.
        spdlog::warn("breaker socket: accept(): {}", errno_text(errno));
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    if (clients_.size() >= limits_.max_clients) {
      const std::string busy = core::format_breaker_error(
          core::BreakerError::busy, fmt::format("{} clients connected", clients_.size()));
      refused_.fetch_add(1, std::memory_order_relaxed);
      [[maybe_unused]] auto n = send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->fd = fd;
    c->last_activity = Clock::now();
    clients_.push_back(std::move(c));
    connected_.fetch_add(1, std::memory_order_relaxed);
  }
}

void BreakerSocket::read_from(Client& c) {
  char buf[kReadChunk];
  ssize_t n = recv(c.fd, buf, sizeof buf, 0);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close_client(c, std::nullopt);
    return;
  }
  if (n == 0) {
    c.eof = true;
    if (!c.in.empty()) {
      c.in.clear();
      reply_error(c, core::BreakerError::incomplete, "the last line had no \\n");
    }
    if (c.fd >= 0 && c.pending() == 0) close_client(c, std::nullopt);
    return;
  }
  c.in.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  while (c.fd >= 0) {
    size_t nl = c.in.find('\n', start);
    if (nl == std::string::npos) break;
    if (c.pending() > limits_.max_pending_output) {
      close_client(c, CloseReason::slow_reader);  // asks for more without reading what it got
      return;
    }
    handle_line(c, std::string_view(c.in).substr(start, nl - start));
    start = nl + 1;
  }
  if (c.fd < 0) return;
  c.in.erase(0, start);
  if (c.in.size() >= core::kBreakerMaxLine) {
    c.in.clear();
    reply_error(c, core::BreakerError::too_long,
                fmt::format("no \\n within {} bytes", core::kBreakerMaxLine));
  }
}

void BreakerSocket::handle_line(Client& c, std::string_view line) {
  c.last_activity = Clock::now();
  auto parsed = core::parse_breaker_request(line);
  if (auto* error = std::get_if<core::BreakerParseError>(&parsed)) {
    reply_error(c, error->kind, error->detail);
    return;
  }
  const auto& request = std::get<core::BreakerRequest>(parsed);
  std::string reply;
  if (request.command == core::BreakerCommand::ping) {
    reply = core::format_breaker_pong();
  } else {
    try {
      reply = provider_(request);
    } catch (const std::exception& e) {
      spdlog::warn("breaker socket: answering a request failed: {}", e.what());
      reply.clear();
    }
    if (reply.empty() || reply.back() != '\n') {
      // The daemon's own failure: not counted against the client.
      requests_error_.fetch_add(1, std::memory_order_relaxed);
      errors_[static_cast<size_t>(core::BreakerError::internal)].fetch_add(1);
      c.out += core::format_breaker_error(core::BreakerError::internal);
      flush(c);
      return;
    }
  }
  requests_ok_.fetch_add(1, std::memory_order_relaxed);
  c.out += reply;
  flush(c);
}

void BreakerSocket::reply_error(Client& c, core::BreakerError kind, std::string_view detail) {
  requests_error_.fetch_add(1, std::memory_order_relaxed);
  errors_[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  c.errors++;
  c.out += core::format_breaker_error(kind, detail);
  flush(c);
  if (c.fd < 0 || c.eof) return;
  // One attempt to deliver the error, then close: such a client is not worth buffering for.
  if (kind == core::BreakerError::too_long)
    close_client(c, CloseReason::too_long);
  else if (c.errors >= limits_.max_errors)
    close_client(c, CloseReason::errors);
}

void BreakerSocket::flush(Client& c) {
  while (c.fd >= 0 && c.pending() > 0) {
    ssize_t n = send(c.fd, c.out.data() + c.out_sent, c.pending(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      c.last_activity = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_client(c, std::nullopt);  // the client went away
    return;
  }
  if (c.fd < 0) return;
  if (c.pending() == 0) {
    c.out.clear();
    c.out_sent = 0;
    if (c.eof) close_client(c, std::nullopt);
  } else if (c.out_sent > limits_.max_pending_output) {
    c.out.erase(0, c.out_sent);  // keep the buffer from growing with what was already sent
    c.out_sent = 0;
  }
}

void BreakerSocket::close_client(Client& c, std::optional<CloseReason> reason) {
  if (c.fd < 0) return;
  // Counted before the close, so a client that sees its connection end sees the count too.
  connected_.fetch_sub(1, std::memory_order_relaxed);
  if (reason) closed_[static_cast<size_t>(*reason)].fetch_add(1, std::memory_order_relaxed);
  close(c.fd);
  c.fd = -1;
}

void BreakerSocket::collect(core::MetricSet& set) const {
  using core::MetricType;
  const auto load = [](const std::atomic<uint64_t>& v) {
    return static_cast<double>(v.load(std::memory_order_relaxed));
  };
  const char* requests_help = "Requests answered on the circuit-breaker socket, by result";
  set.add(core::metric::kBreakerSocketRequests, MetricType::Counter, requests_help,
          {{"result", "ok"}}, load(requests_ok_));
  set.add(core::metric::kBreakerSocketRequests, MetricType::Counter, requests_help,
          {{"result", "error"}}, load(requests_error_));
  for (size_t k = 0; k < core::kBreakerErrorKinds; k++) {
    const auto kind = static_cast<core::BreakerError>(k);
    if (kind == core::BreakerError::busy) continue;  // refusals are counted below
    set.add(core::metric::kBreakerSocketErrors, MetricType::Counter,
            "Requests on the circuit-breaker socket answered with an error, by kind",
            {{"kind", core::breaker_error_name(kind)}}, load(errors_[k]));
  }
  set.add(core::metric::kBreakerSocketClientsRefused, MetricType::Counter,
          "Clients of the circuit-breaker socket refused (error busy): too many connected", {},
          load(refused_));
  static constexpr const char* kReasons[] = {"idle", "errors", "too_long", "slow_reader"};
  for (size_t r = 0; r < std::size(kReasons); r++) {
    set.add(core::metric::kBreakerSocketClientsClosed, MetricType::Counter,
            "Clients the circuit-breaker socket closed, by reason", {{"reason", kReasons[r]}},
            load(closed_[r]));
  }
  set.add(core::metric::kBreakerSocketClients, MetricType::Gauge,
          "Clients connected to the circuit-breaker socket", {}, load(connected_));
}

}  // namespace tailcause::exporter
