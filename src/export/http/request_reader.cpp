// SPDX-License-Identifier: Apache-2.0
#include "export/http/request_reader.h"

#include <boost/beast/http.hpp>

namespace tailcause::exporter::http {

namespace beast_http = boost::beast::http;

struct RequestReader::Parser {
  beast_http::request_parser<beast_http::empty_body> p;
};

RequestReader::RequestReader(size_t header_limit) : header_limit_(header_limit) { reset(); }

RequestReader::~RequestReader() = default;

void RequestReader::reset() {
  parser_ = std::make_unique<Parser>();
  parser_->p.header_limit(static_cast<std::uint32_t>(header_limit_));
  parser_->p.eager(false);  // stop after the headers: a body is refused, never read
  request_ = {};
  refusal_ = {};
  used_ = 0;
}

RequestReader::Outcome RequestReader::refuse(int status, std::string reason) {
  refusal_ = {status, std::move(reason)};
  return Outcome::refused;
}

RequestReader::Outcome RequestReader::feed(std::string_view bytes, size_t& used) {
  used = 0;
  auto& p = parser_->p;
  boost::beast::error_code ec;
  while (!p.is_header_done()) {
    const size_t n = p.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    used_ += n;
    if (ec == beast_http::error::need_more) return Outcome::need_more;
    if (ec == beast_http::error::header_limit) {
      // Beast counts the request line in the header limit (and takes whole lines only): a
      // target that alone fills it is a URI too long, anything else too many header fields.
      const bool line_done =
          used_ > 0 || bytes.substr(0, header_limit_).find('\n') != std::string_view::npos;
      return line_done ? refuse(431, "request headers too large")
                       : refuse(414, "request target too long");
    }
    if (ec == beast_http::error::bad_version) return refuse(505, "HTTP/1.0 or HTTP/1.1 only");
    if (ec) return refuse(400, "malformed request: " + ec.message());
    if (n == 0) return Outcome::need_more;
  }
  const auto& m = p.get();
  if (m.version() != 10 && m.version() != 11) return refuse(505, "HTTP/1.0 or HTTP/1.1 only");
  if (m.method() != beast_http::verb::get && m.method() != beast_http::verb::head) {
    return refuse(405, "method not allowed: this endpoint is read-only");
  }
  if (p.chunked() || p.content_length().value_or(0) > 0) {
    return refuse(400, "a GET or HEAD request has no body");
  }
  request_.method = std::string(m.method_string());
  request_.target = std::string(m.target());
  request_.accept = std::string(m[beast_http::field::accept]);
  request_.version = m.version();
  request_.keep_alive = m.keep_alive();
  return Outcome::request;
}

}  // namespace tailcause::exporter::http
