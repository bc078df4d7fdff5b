// SPDX-License-Identifier: Apache-2.0
// The OpenTelemetry exporter variables: the spec's list syntax, percent-decoding, the base URL
// rule, warnings for bad values, and the configuration file winning over them.
#include "core/trace/otel_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tailcause::core {
namespace {

OtelEnv env_of(const std::map<std::string, std::string>& vars) {
  return OtelEnv::read([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(OtelEnv, KeyValueLists) {
  std::vector<std::string> errors;
  auto kv =
      parse_otel_key_values(" api-key = secret%20value ,tenant=a%2Cb,,empty=, k%3D1=v=1 ", errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(kv,
            (std::map<std::string, std::string>{
                {"api-key", "secret value"}, {"tenant", "a,b"}, {"empty", ""}, {"k=1", "v=1"}}));

  errors.clear();
  kv = parse_otel_key_values("good=1,novalue,=x,bad=%zz,cut=%4,ctl=%0a,good=2", errors);
  EXPECT_EQ(kv, (std::map<std::string, std::string>{{"good", "2"}}));  // a later duplicate wins
  ASSERT_EQ(errors.size(), 5u);
  EXPECT_EQ(errors[0], "member 2 'novalue': expected key=value");
  EXPECT_EQ(errors[1], "member 3 '=x': empty key");
  EXPECT_EQ(errors[2], "member 4 'bad=%zz': a '%' not followed by two hex digits");
  EXPECT_EQ(errors[3], "member 5 'cut=%4': a '%' not followed by two hex digits");
  EXPECT_EQ(errors[4], "member 6 'ctl=%0a': a control character");
  errors.clear();
  EXPECT_TRUE(parse_otel_key_values("", errors).empty());
  EXPECT_TRUE(errors.empty());
}

TEST(OtelEnv, PercentDecode) {
  EXPECT_EQ(percent_decode("a%20b%2c%2C"), "a b,,");
  EXPECT_EQ(percent_decode("100%"), std::nullopt);
  EXPECT_EQ(percent_decode("%4"), std::nullopt);
  EXPECT_EQ(percent_decode("%g0"), std::nullopt);
  EXPECT_EQ(percent_decode(""), "");
}

TEST(OtelEnv, EndpointIsABaseUrl) {
  EXPECT_EQ(otlp_traces_url_from_base("http://collector:4318"), "http://collector:4318/v1/traces");
  EXPECT_EQ(otlp_traces_url_from_base("http://collector:4318/"), "http://collector:4318/v1/traces");
  EXPECT_EQ(otlp_traces_url_from_base("http://gw/otlp"), "http://gw/otlp/v1/traces");

  OtlpSettings o;
  EXPECT_TRUE(apply_otel_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}), o)
                  .empty());
  EXPECT_EQ(o.endpoint, "http://collector:4318/v1/traces");
  // The traces variable is used as it is, and wins over the general one.
  OtlpSettings t;
  apply_otel_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                         {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"}}),
                 t);
  EXPECT_EQ(t.endpoint, "http://b:4318/custom");
}

TEST(OtelEnv, EveryVariableApplied) {
  OtlpSettings o;
  const auto warnings = apply_otel_env(
      env_of({{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc,x-team=ml"},
              {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=infra"},
              {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
              {"OTEL_EXPORTER_OTLP_COMPRESSION", "none"},
              {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
              {"OTEL_RESOURCE_ATTRIBUTES",
               "service.name=from-attrs,deployment.environment=prod,k8s.cluster.name=c%201"},
              {"OTEL_SERVICE_NAME", "agent-node"}}),
      o);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(o.headers, (std::map<std::string, std::string>{{"Authorization", "Bearer abc"},
                                                           {"x-team", "infra"}}));
  EXPECT_EQ(o.timeout_ms, 2500u);
  EXPECT_EQ(o.compression, "none");
  EXPECT_EQ(o.service_name, "agent-node");  // OTEL_SERVICE_NAME wins over service.name
  EXPECT_EQ(o.resource_attributes,
            (std::map<std::string, std::string>{{"deployment.environment", "prod"},
                                                {"k8s.cluster.name", "c 1"}}));
  OtlpSettings only_attrs;
  apply_otel_env(env_of({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs"}}), only_attrs);
  EXPECT_EQ(only_attrs.service_name, "from-attrs");
}

TEST(OtelEnv, BadValuesAreWarnedAboutAndIgnored) {
  OtlpSettings o;
  const OtlpSettings before = o;
  const auto w = apply_otel_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
                                        {"OTEL_EXPORTER_OTLP_HEADERS", "bad header=1,ok=%zz"},
                                        {"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
                                        {"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"},
                                        {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                                        {"OTEL_RESOURCE_ATTRIBUTES", "novalue"},
                                        {"OTEL_SERVICE_NAME", "  "}}),
                                o);
  EXPECT_EQ(o, before);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[0],
            "OTEL_EXPORTER_OTLP_ENDPOINT: OTLP endpoint 'collector:4318/v1/traces': expected "
            "http://HOST:PORT/v1/traces (OTLP/HTTP); ignored");
  EXPECT_EQ(w[1],
            "OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported, tailcause sends http/protobuf");
  EXPECT_EQ(w[2],
            "OTEL_EXPORTER_OTLP_HEADERS: member 2 'ok=%zz': a '%' not followed by two hex "
            "digits; ignored");
  EXPECT_EQ(w[3], "OTEL_EXPORTER_OTLP_HEADERS: 'bad header' is not an HTTP header name; ignored");
  EXPECT_EQ(w[4],
            "OTEL_EXPORTER_OTLP_TIMEOUT: '10s' is not a whole number of milliseconds from 1 to "
            "3600000; ignored");
  EXPECT_EQ(w[5], "OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' is not gzip or none; ignored");
  EXPECT_EQ(w[6], "OTEL_RESOURCE_ATTRIBUTES: member 1 'novalue': expected key=value; ignored");
  EXPECT_EQ(w[7], "OTEL_SERVICE_NAME: empty or holds a control character; ignored");
}

// The file wins: the variables fill the settings first, then the file is parsed over them.
TEST(OtelEnv, TheConfigurationFileWins) {
  Config base;
  apply_otel_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"},
                         {"OTEL_EXPORTER_OTLP_HEADERS", "a=env,b=env"},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                         {"OTEL_SERVICE_NAME", "env-name"},
                         {"OTEL_RESOURCE_ATTRIBUTES", "team=env,zone=env"}}),
                 base.otlp);
  const Config c = parse_config(R"(otlp:
  endpoint: http://file:4318/v1/traces
  headers:
    a: file
  service_name: file-name
  compression: none
  resource_attributes:
    zone: file
)",
                                "f.yaml", base);
  EXPECT_EQ(c.otlp.endpoint, "http://file:4318/v1/traces");
  EXPECT_EQ(c.otlp.headers, (std::map<std::string, std::string>{{"a", "file"}, {"b", "env"}}));
  EXPECT_EQ(c.otlp.timeout_ms, 2500u);  // the file did not set it
  EXPECT_EQ(c.otlp.service_name, "file-name");
  EXPECT_EQ(c.otlp.compression, "none");
  EXPECT_EQ(c.otlp.resource_attributes,
            (std::map<std::string, std::string>{{"team", "env"}, {"zone", "file"}}));
  // Without a file the variables stand.
  EXPECT_EQ(parse_config("", "f.yaml", base).otlp, base.otlp);
}

TEST(OtelEnv, ConfigKeysAreChecked) {
  EXPECT_THROW(parse_config("otlp:\n  compression: zstd\n", "f.yaml"), ConfigError);
  EXPECT_THROW(parse_config("otlp:\n  resource_attributes: [a]\n", "f.yaml"), ConfigError);
  EXPECT_THROW(parse_config("otlp:\n  resource_attributes:\n    service.name: x\n", "f.yaml"),
               ConfigError);
  EXPECT_EQ(parse_config("", "f.yaml").otlp.compression, "gzip");
}

}  // namespace
}  // namespace tailcause::core
