// SPDX-License-Identifier: Apache-2.0
// The request side of one HTTP/1.x connection, without I/O: bytes in, one request or one
// refusal out. Boost.Beast's parser reads the request line and headers; this adds the
// endpoint's rules on top: GET and HEAD only, no request bodies, at most `header_limit` bytes
// of request line and headers. The query string is not parsed here (the API parses its own,
// bounded), so a target of a thousand empty parameters costs nothing.
// Pure and synchronous so that the fuzzer can drive it thousands of times a second.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tailcause::exporter::http {

struct Request {
  std::string method;     // "GET" or "HEAD"
  std::string target;     // as sent, query string included
  std::string accept;     // the Accept header, "" when absent
  unsigned version = 11;  // 10 or 11
  bool keep_alive = false;
};

// Answered, then the connection is closed: the stream can no longer be trusted.
struct Refusal {
  int status = 400;
  std::string reason;  // the body of the answer, one line
};

class RequestReader {
 public:
  explicit RequestReader(size_t header_limit);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  enum class Outcome { need_more, request, refused };
  // Reads from `bytes`, what the connection holds that no earlier call used; `used` is set to
  // how many of them this call used, which the caller drops. After a request, the bytes left
  // begin the next one.
  Outcome feed(std::string_view bytes, size_t& used);
  const Request& request() const { return request_; }
  const Refusal& refusal() const { return refusal_; }
  // Ready for the next request on the same connection.
  void reset();
  // Whether any byte of the next request has been read.
  bool started() const { return used_ > 0; }

 private:
  Outcome refuse(int status, std::string reason);

  struct Parser;
  size_t header_limit_;
  size_t used_ = 0;  // of this request, by earlier calls
  std::unique_ptr<Parser> parser_;
  Request request_;
  Refusal refusal_;
};

}  // namespace tailcause::exporter::http
