// SPDX-License-Identifier: Apache-2.0
#include "cli/api_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <stdexcept>

namespace tailcause::cli {

ApiEndpoint parse_api_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) != 0)
    throw std::invalid_argument(fmt::format("{}: want http://HOST:PORT", url));
  rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  ApiEndpoint e{rest, 80};
  if (const auto colon = rest.rfind(':'); colon != std::string::npos && rest.back() != ']') {
    e.host = rest.substr(0, colon);
    const std::string p = rest.substr(colon + 1);
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), e.port);
    if (ec != std::errc{} || end != p.data() + p.size() || e.port < 1 || e.port > 65535)
      throw std::invalid_argument(fmt::format("{}: bad port", url));
  }
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  if (e.host.empty() || e.host.find('/') != std::string::npos)
    throw std::invalid_argument(fmt::format("{}: want http://HOST:PORT", url));
  return e;
}

ApiClient::ApiClient(const std::string& url) : url_(url) {
  const ApiEndpoint e = parse_api_url(url);
  client_ = std::make_unique<httplib::ClientImpl>(e.host, e.port);
  client_->set_connection_timeout(2, 0);
  client_->set_read_timeout(5, 0);
}

ApiClient::~ApiClient() = default;

nlohmann::json ApiClient::get(const std::string& path) {
  httplib::Result res = client_->Get(path);
  if (!res) {
    const bool refused = res.error() == httplib::Error::Connection;
    throw std::runtime_error(fmt::format("{}{}: {}", url_, path,
                                         refused
                                             ? "cannot connect (is `tailcause run` serving there?)"
                                             : httplib::to_string(res.error())));
  }
  nlohmann::json body = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 200) {
    const std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                                ? body["error"].get<std::string>()
                                : res->body.substr(0, 120);
    throw std::runtime_error(fmt::format("{}{}: HTTP {}: {}", url_, path, res->status, why));
  }
  if (body.is_discarded()) throw std::runtime_error(fmt::format("{}{}: not JSON", url_, path));
  return body;
}

}  // namespace tailcause::cli
