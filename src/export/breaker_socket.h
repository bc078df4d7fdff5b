// SPDX-License-Identifier: Apache-2.0
// The circuit-breaker socket: a local Unix stream socket, owner-only (0600), where agents (the
// SDK's tailcause_sdk_breaker_state(), Python's tailcause.breaker_state()) read their
// breaker's state to shed or slow their load. Line protocol: core/detect/breaker_protocol.h.
//
// One thread polls the listening socket and at most `max_clients` clients (more are told
// "error busy" and closed). It never blocks on a client: writes are non-blocking, and a client
// that does not read its replies is dropped once more than `max_pending_output` bytes wait for
// it. A line of kBreakerMaxLine bytes without "\n" gets an error and the client is closed, as
// is one with `max_errors` bad requests or one idle (no complete request, nothing written to
// it) for `idle_timeout`.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "core/detect/breaker_protocol.h"
#include "core/record/metrics.h"

namespace tailcause::exporter {

struct BreakerSocketError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct BreakerSocketLimits {
  size_t max_clients = 64;
  std::chrono::milliseconds idle_timeout{10'000};
  size_t max_pending_output = 64 * 1024;  // bytes of replies a client has not read yet
  uint32_t max_errors = 3;                // bad requests before a client is closed
};

class BreakerSocket {
 public:
  // Answers a well-formed state or list request with its reply text (core::
  // answer_breaker_request(); one or more lines, each ending in "\n"). Called on the socket's
  // thread, one request at a time; it must lock what it reads. An exception is answered
  // "error internal". ping is answered without it.
  using Provider = std::function<std::string(const core::BreakerRequest&)>;

  BreakerSocket(std::string path, Provider provider, BreakerSocketLimits limits = {});
  ~BreakerSocket();
  BreakerSocket(const BreakerSocket&) = delete;
  BreakerSocket& operator=(const BreakerSocket&) = delete;

  // Who may connect, applied by start(): the socket file's mode (default 0600) and group
  // (default: the daemon's). Giving it to a group takes membership of that group or CAP_CHOWN.
  void set_access(mode_t mode, std::optional<gid_t> group) {
    mode_ = mode;
    group_ = group;
  }

  // Creates the directory (0755) if missing, replaces a stale socket file (nobody accepts on
  // it), binds the socket 0600 and serves on its own thread. Throws BreakerSocketError when
  // another process serves `path`, when `path` exists and is not a socket, or on any failure.
  void start();
  // Closes every client, joins the thread and removes the socket file if it is still ours.
  // Idempotent.
  void stop();

  const std::string& path() const { return path_; }

  // tailcause_breaker_socket_requests_total{result}, _errors_total{kind},
  // _clients_refused_total, _clients_closed_total{reason}, tailcause_breaker_socket_clients.
  void collect(core::MetricSet& set) const;

 private:
  struct Client;
  enum class CloseReason : uint8_t { idle, errors, too_long, slow_reader, count };

  mode_t mode_ = 0600;
  std::optional<gid_t> group_;

  void bind_socket();
  void run();
  void accept_clients();
  void read_from(Client& c);
  void handle_line(Client& c, std::string_view line);
  void reply_error(Client& c, core::BreakerError kind, std::string_view detail);
  void flush(Client& c);
  void close_client(Client& c, std::optional<CloseReason> reason);

  std::string path_;
  Provider provider_;
  BreakerSocketLimits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd stop() writes to
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;  // the socket file we bound: stop() unlinks only that one
  std::thread thread_;
  std::vector<std::unique_ptr<Client>> clients_;  // the socket thread's only
  std::chrono::steady_clock::time_point accept_paused_until_{};

  std::atomic<uint64_t> requests_ok_{0}, requests_error_{0}, refused_{0};
  std::array<std::atomic<uint64_t>, core::kBreakerErrorKinds> errors_{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(CloseReason::count)> closed_{};
  std::atomic<uint64_t> connected_{0};
};

}  // namespace tailcause::exporter
