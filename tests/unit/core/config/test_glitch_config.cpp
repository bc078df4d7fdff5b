// SPDX-License-Identifier: Apache-2.0
// The issue-4 configuration sections (glitch, cache_breakdown, entropy, breaker, journal, otlp):
// every key parsed, and bad values rejected with the file, line and key.
#include <gtest/gtest.h>

#include <string>

#include "config_error.h"
#include "core/config/config.h"

using namespace tailcause::core;
using tailcause::testing::config_error;

namespace {

std::string endpoint_error(const std::string& text) {
  try {
    parse_otlp_endpoint(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted endpoint " << text;
  return "";
}

}  // namespace

TEST(GlitchConfig, EveryKeyIsParsed) {
  Config c = parse_config(R"(
glitch:
  request_slo_ms: 1000
  stage_slo_ms: 150
  stage_slos_ms: {generation: 1500, "my.stage": 20}
  p99_factor: 3.5
  min_samples: 10
cache_breakdown: {window_s: 30, min_lookups: 5, ratio: 0.4, warmup_s: 0}
entropy: {rise: 0.5, outputs: 4, correlation_ms: 8}
breaker:
  slow_ms: 300
  trip_after: 5
  quiet_s: 10
  socket: /tmp/x/breaker.sock
  state_file: ""
journal: {path: /tmp/j.db, max_age_h: 2, max_mb: 8}
otlp:
  endpoint: http://127.0.0.1:4318/v1/traces
  headers: {authorization: "Bearer abc"}
  service_name: edge-1
  budget_spans_per_s: 50
  sample_normal: 0
  queue_spans: 100
  batch_spans: 10
  timeout_ms: 250
)",
                          "f.yaml");
  EXPECT_EQ(c.glitch.request_slo_ms, 1000u);
  EXPECT_EQ(c.glitch.stage_slo_ms, 150u);
  EXPECT_EQ(c.glitch.stage_slos_ms.at("generation"), 1500u);
  EXPECT_EQ(c.glitch.stage_slos_ms.at("my.stage"), 20u);
  EXPECT_DOUBLE_EQ(c.glitch.p99_factor, 3.5);
  EXPECT_EQ(c.glitch.min_samples, 10u);
  EXPECT_EQ(c.cache_breakdown.window_s, 30u);
  EXPECT_EQ(c.cache_breakdown.min_lookups, 5u);
  EXPECT_DOUBLE_EQ(c.cache_breakdown.ratio, 0.4);
  EXPECT_EQ(c.cache_breakdown.warmup_s, 0u);
  EXPECT_DOUBLE_EQ(c.entropy.rise, 0.5);
  EXPECT_EQ(c.entropy.outputs, 4u);
  EXPECT_EQ(c.entropy.correlation_ms, 8u);
  EXPECT_EQ(c.breaker.slow_ms, 300u);
  EXPECT_EQ(c.breaker.trip_after, 5u);
  EXPECT_EQ(c.breaker.quiet_s, 10u);
  EXPECT_EQ(c.breaker.socket, "/tmp/x/breaker.sock");
  EXPECT_EQ(c.breaker.state_file, "");
  EXPECT_EQ(c.journal.path, "/tmp/j.db");
  EXPECT_EQ(c.journal.max_age_h, 2u);
  EXPECT_EQ(c.journal.max_mb, 8u);
  EXPECT_EQ(c.otlp.endpoint, "http://127.0.0.1:4318/v1/traces");
  EXPECT_EQ(c.otlp.headers.at("authorization"), "Bearer abc");
  EXPECT_EQ(c.otlp.service_name, "edge-1");
  EXPECT_EQ(c.otlp.budget_spans_per_s, 50u);
  EXPECT_DOUBLE_EQ(c.otlp.sample_normal, 0.0);
  EXPECT_EQ(c.otlp.queue_spans, 100u);
  EXPECT_EQ(c.otlp.batch_spans, 10u);
  EXPECT_EQ(c.otlp.timeout_ms, 250u);
}

TEST(GlitchConfig, BadValuesNameFileLineAndKey) {
  EXPECT_EQ(config_error("glitch:\n  stage_slo_ms: 0\n")
                .rfind("f.yaml:2: glitch.stage_slo_ms: expected an integer", 0),
            0u);
  EXPECT_EQ(config_error("glitch:\n  stage_slos_ms: {\"bad name\": 5}\n")
                .rfind("f.yaml:2: glitch.stage_slos_ms.bad name: not a stage name", 0),
            0u);
  EXPECT_EQ(config_error("glitch:\n  p99_factor: 0.5\n")
                .rfind("f.yaml:2: glitch.p99_factor: expected a number from 1 to 1000", 0),
            0u);
  EXPECT_EQ(config_error("glitch:\n  p99_factor: fast\n").rfind("f.yaml:2: glitch.p99_factor:", 0),
            0u);
  EXPECT_EQ(
      config_error("cache_breakdown: {ratio: 1.5}\n").rfind("f.yaml:1: cache_breakdown.ratio:", 0),
      0u);
  EXPECT_EQ(config_error("breaker: {socket: relative/path}\n")
                .rfind("f.yaml:1: breaker.socket: expected an absolute path", 0),
            0u);
  EXPECT_NE(config_error("breaker: {socket: /" + std::string(120, 'x') + "}\n")
                .find("longer than 107 bytes"),
            std::string::npos);
  EXPECT_EQ(config_error("journal: {path: j.db}\n")
                .rfind("f.yaml:1: journal.path: expected an absolute path", 0),
            0u);
  EXPECT_EQ(
      config_error("otlp:\n  endpoint: localhost:4318\n")
          .rfind("f.yaml:2: otlp.endpoint: OTLP endpoint 'localhost:4318': expected http://", 0),
      0u);
  EXPECT_EQ(config_error("otlp:\n  sample_normal: 2\n").rfind("f.yaml:2: otlp.sample_normal:", 0),
            0u);
  EXPECT_EQ(config_error("otlp:\n  headers: {\"bad name\": x}\n")
                .rfind("f.yaml:2: otlp.headers.bad name: not an HTTP header name", 0),
            0u);
  EXPECT_EQ(
      config_error("otlp:\n  queue_spans: 10\n  batch_spans: 20\n")
          .rfind("f.yaml:3: otlp.batch_spans: batch_spans (20) must not exceed queue_spans (10)",
                 0),
      0u);
  EXPECT_EQ(config_error("entropy: {frobnicate: 1}\n")
                .rfind("f.yaml:1: entropy.frobnicate: unknown key", 0),
            0u);
}

TEST(OtlpEndpoint, AcceptedForms) {
  auto e = parse_otlp_endpoint("http://collector:4318/v1/traces");
  EXPECT_EQ(e.scheme, "http");
  EXPECT_EQ(e.host, "collector");
  EXPECT_EQ(e.port, 4318);
  EXPECT_EQ(e.path, "/v1/traces");
  e = parse_otlp_endpoint("http://127.0.0.1:4318");
  EXPECT_EQ(e.path, "/v1/traces");
  e = parse_otlp_endpoint("https://otel.example.com/otlp/v1/traces");
  EXPECT_EQ(e.port, 443);
  EXPECT_EQ(e.path, "/otlp/v1/traces");
  e = parse_otlp_endpoint("http://[::1]:4318/v1/traces");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 4318);
}

TEST(OtlpEndpoint, MalformedOnesSayWhy) {
  EXPECT_NE(endpoint_error("").find("expected http://"), std::string::npos);
  EXPECT_NE(endpoint_error("grpc://c:4317").find("expected http://"), std::string::npos);
  EXPECT_NE(endpoint_error("http://").find("no host"), std::string::npos);
  EXPECT_NE(endpoint_error("http://:4318/v1/traces").find("no host"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c:0/v1/traces").find("port must be 1-65535"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c:99999").find("port must be 1-65535"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c:/v1").find("empty port"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c:43x8").find("port must be 1-65535"), std::string::npos);
  EXPECT_NE(endpoint_error("http://user:pw@c:4318").find("credentials"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c:4318/v1 traces").find("space"), std::string::npos);
  EXPECT_NE(endpoint_error("http://[::1/v1").find("brackets"), std::string::npos);
  EXPECT_NE(endpoint_error("http://c$d:4318").find("host"), std::string::npos);
}
