// SPDX-License-Identifier: Apache-2.0
// The request reader: what is a request, what is refused with which status, and how it reads
// a request that arrives a byte at a time or several at once.
#include <gtest/gtest.h>

#include <string>

#include "export/http/request_reader.h"

namespace tailcause::exporter::http {
namespace {

using Outcome = RequestReader::Outcome;

// Feeds `bytes` whole; returns the outcome and leaves in `rest` what the request did not use.
Outcome read_one(RequestReader& r, std::string_view bytes, std::string* rest = nullptr) {
  size_t used = 0;
  const Outcome o = r.feed(bytes, used);
  if (rest) *rest = std::string(bytes.substr(used));
  return o;
}

TEST(RequestReader, AGetWithAThousandEmptyParametersIsARequest) {
  RequestReader r(32768);
  const std::string target = "/metrics?" + std::string(1000, '&');
  ASSERT_EQ(read_one(r, "GET " + target + " HTTP/1.1\r\nHost: t\r\nAccept: text/plain\r\n\r\n"),
            Outcome::request);
  EXPECT_EQ(r.request().method, "GET");
  EXPECT_EQ(r.request().target, target);
  EXPECT_EQ(r.request().accept, "text/plain");
  EXPECT_TRUE(r.request().keep_alive);
}

TEST(RequestReader, BodiesOnGetAndHeadAreRefused) {
  for (const char* req :
       {"HEAD /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}) {
    RequestReader r(32768);
    ASSERT_EQ(read_one(r, req), Outcome::refused) << req;
    EXPECT_EQ(r.refusal().status, 400) << req;
    EXPECT_NE(r.refusal().reason.find("no body"), std::string::npos);
  }
  RequestReader r(32768);
  EXPECT_EQ(read_one(r, "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"),
            Outcome::request);
}

TEST(RequestReader, EachRefusalHasItsStatus) {
  const std::pair<std::string, int> cases[] = {
      {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", 405},
      {"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 405},
      {"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\nBad Header\r\n\r\n", 400},
      {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400},  // TLS to a plain-text port
      {"GET /" + std::string(40000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"GET / HTTP/1.1\r\n" + std::string(40000, 'X') + ": 1\r\n\r\n", 431},
  };
  for (const auto& [req, status] : cases) {
    RequestReader r(32768);
    EXPECT_EQ(read_one(r, req), Outcome::refused) << req.substr(0, 40);
    EXPECT_EQ(r.refusal().status, status) << req.substr(0, 40);
  }
}

TEST(RequestReader, ARequestDrippedAByteAtATimeIsRead) {
  const std::string req =
      "GET /healthz HTTP/1.0\r\nHost: t\r\nX-Pad: " + std::string(100, 'p') + "\r\n\r\n";
  RequestReader r(32768);
  std::string pending;
  Outcome o = Outcome::need_more;
  for (char c : req) {
    ASSERT_EQ(o, Outcome::need_more);
    pending += c;
    size_t used = 0;
    o = r.feed(pending, used);
    pending.erase(0, used);
  }
  ASSERT_EQ(o, Outcome::request);
  EXPECT_EQ(r.request().target, "/healthz");
  EXPECT_EQ(r.request().version, 10u);
  EXPECT_FALSE(r.request().keep_alive);  // HTTP/1.0 without keep-alive
  EXPECT_TRUE(pending.empty());
}

TEST(RequestReader, PipelinedRequestsAreReadOneByOne) {
  RequestReader r(32768);
  std::string rest;
  ASSERT_EQ(read_one(r,
                     "GET /a HTTP/1.1\r\nHost: t\r\n\r\nHEAD /b HTTP/1.1\r\nHost: t\r\n"
                     "Connection: close\r\n\r\n",
                     &rest),
            Outcome::request);
  EXPECT_EQ(r.request().target, "/a");
  r.reset();
  ASSERT_EQ(read_one(r, rest, &rest), Outcome::request);
  EXPECT_EQ(r.request().method, "HEAD");
  EXPECT_EQ(r.request().target, "/b");
  EXPECT_FALSE(r.request().keep_alive);
  EXPECT_TRUE(rest.empty());
}

}  // namespace
}  // namespace tailcause::exporter::http
