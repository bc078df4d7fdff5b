// The read-only HTTP endpoint: /metrics (Prometheus text or OpenMetrics by Accept header),
// / (an index), /healthz. Anything that changes behaviour goes elsewhere (local socket).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/config.h"
#include "core/metrics.h"

namespace httplib {
class Server;
}

namespace tailcause::exporter {

class HttpServer {
 public:
  using Collect = std::function<void(core::MetricSet&)>;
  explicit HttpServer(Collect collect);
  ~HttpServer();

  // Binds the address now, so a taken port is reported before any probe is loaded.
  // Throws std::runtime_error naming the address and the reason.
  void bind(const core::ListenAddress& address);
  // Serves on a background thread until stop().
  void start();
  void stop();
  int port() const { return port_; }

 private:
  Collect collect_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tailcause::exporter
