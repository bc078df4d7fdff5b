// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the HTTP request path, without sockets, as a connection sees it. The input's
// first byte sets how many bytes each read delivers (1..64, so requests arrive split at every
// place); the rest is the byte stream a client sent. It goes through RequestReader exactly as
// the endpoint's sessions feed it, and each request read is answered by HttpServer::answer().
// Checked: the reader decides within its header limit (never holds more), uses no byte twice,
// refuses only with the statuses the endpoint documents, and the answers stay small (no range
// or pipelining amplification). The input's first line is also fed to answer() directly as
// method, path and Accept header.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "export/http/request_reader.h"
#include "export/http_server.h"

namespace {

using tailcause::exporter::HttpServer;
using tailcause::exporter::http::RequestReader;

constexpr size_t kHeaderLimit = tailcause::exporter::http::EndpointLimits{}.header_limit;

const HttpServer& server() {
  static const HttpServer* s = new HttpServer([](tailcause::core::MetricSet& set) {
    set.add("fuzz_requests", tailcause::core::MetricType::Counter, "Requests.", {{"a", "b"}}, 1);
  });
  return *s;
}

[[noreturn]] void finding(const char* what, size_t a, size_t b) {
  std::fprintf(stderr, "%s (%zu, %zu)\n", what, a, b);
  std::abort();
}

// The line as a handler call: "METHOD PATH\nACCEPT...".
void answer_line(std::string_view text) {
  const auto line_end = text.find('\n');
  const std::string_view line = text.substr(0, line_end);
  const std::string_view accept =
      line_end == std::string_view::npos ? "" : text.substr(line_end + 1);
  const auto space = line.find(' ');
  const auto reply = server().answer(
      line.substr(0, space), space == std::string_view::npos ? "" : line.substr(space + 1), accept);
  // 400: a bad query to the JSON API (/api/v1/...).
  if (reply.status != 200 && reply.status != 400 && reply.status != 404 && reply.status != 405)
    finding("answer() gave an undocumented status", reply.status, 0);
}

// Bytes answered for the stream, as a session would deliver it `step` bytes at a time.
size_t answer_stream(std::string_view stream, size_t step) {
  RequestReader reader(kHeaderLimit);
  std::string pending;
  size_t answered = 0;
  for (size_t at = 0; at < stream.size() || !pending.empty();) {
    const size_t take = std::min(step, stream.size() - at);
    pending.append(stream.substr(at, take));
    at += take;
    size_t used = 0;
    const auto outcome = reader.feed(pending, used);
    if (used > pending.size())
      finding("the reader used more than it was given", used, pending.size());
    pending.erase(0, used);
    if (outcome == RequestReader::Outcome::refused) {
      const int s = reader.refusal().status;
      if (s != 400 && s != 405 && s != 414 && s != 431 && s != 505)
        finding("an undocumented refusal", static_cast<size_t>(s), 0);
      return answered + reader.refusal().reason.size();  // answered, then closed
    }
    if (outcome == RequestReader::Outcome::request) {
      const auto& r = reader.request();
      answered += server().answer(r.method, r.target, r.accept).body.size();
      reader.reset();
      continue;
    }
    if (pending.size() > kHeaderLimit + step)
      finding("the reader held past its limit", pending.size(), kHeaderLimit);
    if (take == 0) break;  // the client sent all it had: the rest waits for the timeout
  }
  return answered;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  answer_line(text);
  // Every reply but the page (/) is a few KB at most; even a request per 16 input bytes
  // (pipelined) cannot legitimately ask for more than this.
  static const size_t page = server().answer("GET", "/", "").body.size();
  const size_t bound = 4096 + (size / 16 + 1) * (page + 4096);
  if (const size_t got = answer_stream(text, step); got > bound) finding("amplified", size, got);
  return 0;
}
