// SPDX-License-Identifier: Apache-2.0
// The JSON API's client for `top` and `heatmap`: GET a path from a daemon's endpoint
// ("http://HOST:PORT", default the local one) with short timeouts; every failure is one clear
// line (std::runtime_error).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace httplib {
class ClientImpl;
}

namespace tailcause::cli {

inline constexpr const char* kDefaultApiUrl = "http://127.0.0.1:9436";

// "http://HOST[:PORT][/]" split; std::invalid_argument for anything else (the --url validator).
struct ApiEndpoint {
  std::string host;
  int port = 80;
};
ApiEndpoint parse_api_url(const std::string& url);

class ApiClient {
 public:
  // `url` as parse_api_url() takes it (the flag's validator has checked it).
  explicit ApiClient(const std::string& url);
  ~ApiClient();
  nlohmann::json get(const std::string& path);
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::unique_ptr<httplib::ClientImpl> client_;
};

}  // namespace tailcause::cli
