// SPDX-License-Identifier: Apache-2.0
#include "tool_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "rng.h"

namespace rag {
namespace {

// The "knowledge base" tool: counts words and derives a stable record number for the query.
nlohmann::json lookup(const std::string& tenant, const std::string& query) {
  std::size_t words = 0;
  bool in_word = false;
  for (char c : query) {
    bool letter = std::isalnum(static_cast<unsigned char>(c)) != 0;
    words += (letter && !in_word) ? 1 : 0;
    in_word = letter;
  }
  uint64_t h = fnv1a(query, fnv1a(tenant));
  return {{"tool", "kb-lookup"},
          {"tenant", tenant},
          {"words", words},
          {"record", fmt::format("KB-{:06}", h % 1000000)},
          {"confidence", static_cast<double>(h % 1000) / 1000.0}};
}

}  // namespace

void run_tool_server(int port_fd, int threads) {
  httplib::Server server;
  // Small request-answer exchanges: without TCP_NODELAY a response written in two parts waits
  // for the client's delayed ACK (40 ms), a network stall tailcause rightly reports as such.
  server.set_tcp_nodelay(true);
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  server.Get("/tool", [](const httplib::Request& req, httplib::Response& res) {
    int delay_ms =
        req.has_param("delay_ms") ? std::atoi(req.get_param_value("delay_ms").c_str()) : 0;
    delay_ms = std::clamp(delay_ms, 0, 10000);
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (!req.has_param("q")) {
      res.status = 400;
      res.set_content("missing q\n", "text/plain");
      return;
    }
    auto answer = lookup(req.get_param_value("tenant"), req.get_param_value("q"));
    answer["delay_ms"] = delay_ms;
    res.set_content(answer.dump(), "application/json");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::string text = port > 0 ? std::to_string(port) : "0";
  (void)!::write(port_fd, text.data(), text.size());
  ::close(port_fd);
  if (port <= 0) ::_exit(1);
  server.listen_after_bind();
  ::_exit(0);
}

ToolClient::ToolClient(int port) : client_(std::make_unique<httplib::Client>("127.0.0.1", port)) {
  client_->set_keep_alive(true);
  client_->set_tcp_nodelay(true);
  client_->set_connection_timeout(2, 0);
  client_->set_read_timeout(10, 0);
}

ToolClient::~ToolClient() = default;

std::string ToolClient::call(const std::string& tenant, const std::string& query, int delay_ms) {
  httplib::Params params{{"tenant", tenant}, {"q", query}, {"delay_ms", std::to_string(delay_ms)}};
  auto res = client_->Get("/tool", params, httplib::Headers{});
  if (!res)
    throw std::runtime_error(fmt::format("tool call failed: {}", httplib::to_string(res.error())));
  if (res->status != 200)
    throw std::runtime_error(fmt::format("tool answered HTTP {}", res->status));
  return res->body;
}

}  // namespace rag
