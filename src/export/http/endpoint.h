// SPDX-License-Identifier: Apache-2.0
// The endpoint's transport: one Asio I/O thread (epoll) that accepts, reads requests with
// RequestReader, hands each to a route and writes its reply. Who holds a connection is the
// ConnectionTable's call; deadlines close a request not complete within the idle timeout of
// its connection's start (or of its previous answer), and a reply not taken within it.
// The route decides where a request is answered (at once, or on a lane off this thread); the
// I/O thread itself never collects, renders or queries anything.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "export/api/params.h"
#include "export/http/connection_table.h"
#include "export/http/request_reader.h"

namespace tailcause::exporter::http {

struct EndpointLimits {
  ConnectionLimits connections;
  unsigned idle_timeout_s = 10;  // to send a whole request, or to take the whole reply
  size_t header_limit = 32768;   // request line + headers; more is answered 431 (or 414)
};

// What the endpoint has done to connections, for /metrics.
struct EndpointStats {
  uint64_t open = 0;
  uint64_t evicted = 0;      // closed to make room for a newer one
  uint64_t refused = 0;      // closed at once: no room, every other one was being answered
  uint64_t idle = 0;         // sent no request within the idle timeout (keep-alive ends here)
  uint64_t timed_out = 0;    // a request begun, or a reply, not done within the idle timeout
  uint64_t bad_request = 0;  // answered 4xx/5xx by the reader (malformed, body, method)
};

class Endpoint {
 public:
  using Reply = api::Reply;
  // Called once per request, from any thread, with its answer.
  using Respond = std::function<void(Reply)>;
  // Called on the I/O thread for each request; must not block.
  using Route = std::function<void(const Request&, Respond)>;

  // Serves the bound, listening socket `listen_fd` (taken over) on a thread of its own.
  Endpoint(int listen_fd, EndpointLimits limits, Route route);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Stops the I/O thread; connections close when the Endpoint is destroyed.
  void stop();
  EndpointStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcause::exporter::http
