// SPDX-License-Identifier: Apache-2.0
// The tool the agent calls in its "tool" stage: a small HTTP server on loopback, run as a child
// process of the agent. The delay per request comes from the caller (the slow-peer fault), so
// the server is slow only for the tenant the fault targets.
#pragma once

#include <memory>
#include <string>

namespace httplib {
class Client;
}

namespace rag {

// In a forked child: binds 127.0.0.1 on a free port, writes the port as text to port_fd, closes
// it and serves GET /tool?tenant=T&q=TEXT&delay_ms=N until killed. Never returns.
[[noreturn]] void run_tool_server(int port_fd, int threads);

// One keep-alive connection per worker thread.
class ToolClient {
 public:
  explicit ToolClient(int port);
  ~ToolClient();
  // Returns the tool's answer; throws std::runtime_error on a transport error or non-200.
  std::string call(const std::string& tenant, const std::string& query, int delay_ms);

 private:
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace rag
