// SPDX-License-Identifier: Apache-2.0
// The otlp: section of the configuration (request and stage spans over OTLP/HTTP), and the
// endpoint check it shares with the OTEL_* environment variables (core/trace/otel_env.h).
#include <cctype>

#include "core/config/config.h"
#include "core/config/config_reader.h"

namespace tailcause::core {
namespace {

// "" (no export) or an endpoint parse_otlp_endpoint() takes.
std::string parse_endpoint_key(const Reader& r, const YAML::Node& v, const std::string& key) {
  std::string endpoint = r.string(v, key);
  if (endpoint.empty()) return endpoint;
  try {
    parse_otlp_endpoint(endpoint);
  } catch (const ConfigError& e) {
    r.fail(v, key, e.what());
  }
  return endpoint;
}

// otlp.headers: NAME: VALUE, each sent with every export.
void parse_headers(const Reader& r, const YAML::Node& v, const std::string& key,
                   std::map<std::string, std::string>& headers) {
  if (v.IsNull()) return;
  if (!v.IsMap()) r.fail(v, key, "expected a mapping NAME: VALUE");
  for (const auto& item : v) {
    const std::string name = item.first.Scalar();
    const std::string hk = key + "." + name;
    if (name.empty() || name.find_first_of(" :\r\n\t") != std::string::npos) {
      r.fail(item.first, hk, "not an HTTP header name");
    }
    std::string value = r.string(item.second, hk);
    if (value.find_first_of("\r\n") != std::string::npos) {
      r.fail(item.second, hk, "a header value cannot hold a line break");
    }
    headers[name] = std::move(value);
  }
}

// otlp.resource_attributes: KEY: VALUE, beside service.name (which has its own key).
void parse_resource_attributes(const Reader& r, const YAML::Node& v, const std::string& key,
                               std::map<std::string, std::string>& attributes) {
  if (v.IsNull()) return;
  if (!v.IsMap()) r.fail(v, key, "expected a mapping KEY: VALUE");
  for (const auto& item : v) {
    const std::string name = item.first.Scalar();
    const std::string ak = key + "." + name;
    if (name.empty()) r.fail(item.first, ak, "empty attribute name");
    std::string value = r.string(item.second, ak);
    if (name == "service.name") r.fail(item.first, ak, "set otlp.service_name instead");
    attributes[name] = std::move(value);
  }
}

// The keys that size and pace the export: budget, sampling, queue, batch.
void add_budget_handlers(Reader& r, OtlpSettings& o, std::map<std::string, Reader::Handler>& h) {
  h.emplace("budget_spans_per_s", [&r, &o](const YAML::Node& v, const std::string& kk) {
    o.budget_spans_per_s = r.positive(v, kk, 1000000);
  });
  h.emplace("sample_normal", [&r, &o](const YAML::Node& v, const std::string& kk) {
    o.sample_normal = r.number(v, kk, 0.0, 1.0);
  });
  h.emplace("queue_spans", [&r, &o](const YAML::Node& v, const std::string& kk) {
    o.queue_spans = r.positive(v, kk, 10000000);
  });
  h.emplace("batch_spans", [&r, &o](const YAML::Node& v, const std::string& kk) {
    o.batch_spans = r.positive(v, kk, 100000);
  });
}

}  // namespace

void otlp_section(Reader& r, const YAML::Node& n, const std::string& k, OtlpSettings& o) {
  std::map<std::string, Reader::Handler> h{
      {"endpoint", [&](const YAML::Node& v,
                       const std::string& kk) { o.endpoint = parse_endpoint_key(r, v, kk); }},
      {"headers",
       [&](const YAML::Node& v, const std::string& kk) { parse_headers(r, v, kk, o.headers); }},
      {"service_name",
       [&](const YAML::Node& v, const std::string& kk) {
         o.service_name = r.string(v, kk);
         if (o.service_name.empty()) r.fail(v, kk, "must not be empty");
       }},
      {"timeout_ms", ms_handler(r, o.timeout_ms)},
      {"compression",
       [&](const YAML::Node& v, const std::string& kk) {
         o.compression = r.one_of(v, kk, {"gzip", "none"});
       }},
      {"resource_attributes", [&](const YAML::Node& v, const std::string& kk) {
         parse_resource_attributes(r, v, kk, o.resource_attributes);
       }}};
  add_budget_handlers(r, o, h);
  r.mapping(n, k, h);
}

void check_otlp_section(Reader& r, const OtlpSettings& o) {
  if (o.batch_spans > o.queue_spans) {
    const std::string key = "otlp.batch_spans";
    r.fail_at(r.key_line(key).value_or(r.key_line("otlp.queue_spans").value_or(1)), key,
              fmt::format("batch_spans ({}) must not exceed queue_spans ({})", o.batch_spans,
                          o.queue_spans));
  }
}

namespace {

ConfigError endpoint_error(std::string_view text, const char* why) {
  return ConfigError(fmt::format("OTLP endpoint '{}': {}", text, why));
}

// HOST[:PORT] or [IPV6][:PORT] into e.host; returns the port's text ("" when none is given).
std::string_view split_authority(std::string_view text, std::string_view authority,
                                 OtlpEndpoint& e) {
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || close < 2) {
      throw endpoint_error(text, "unbalanced IPv6 brackets");
    }
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw endpoint_error(text, "expected :PORT after the IPv6 host");
      port = after.substr(1);
      if (port.empty()) throw endpoint_error(text, "empty port");
    }
  } else {
    const auto colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) throw endpoint_error(text, "empty port");
    }
  }
  return port;
}

// The host's characters and the port's range; no port: the scheme's.
void check_host_and_port(std::string_view text, std::string_view port, OtlpEndpoint& e) {
  if (e.host.empty()) throw endpoint_error(text, "no host");
  for (unsigned char ch : e.host) {
    if (!std::isalnum(ch) && ch != '.' && ch != '-' && ch != '_' && ch != ':') {
      throw endpoint_error(text, "the host holds a character a host name cannot");
    }
  }
  e.port = e.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535) {
      throw endpoint_error(text, "port must be 1-65535");
    }
    e.port = static_cast<uint16_t>(v);
  }
}

}  // namespace

OtlpEndpoint parse_otlp_endpoint(std::string_view text) {
  OtlpEndpoint e;
  std::string_view rest = text;
  if (rest.starts_with("http://")) {
    e.scheme = "http";
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    e.scheme = "https";
    rest.remove_prefix(8);
  } else {
    throw endpoint_error(text, "expected http://HOST:PORT/v1/traces (OTLP/HTTP)");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  e.path = slash == std::string_view::npos ? "/v1/traces" : std::string(rest.substr(slash));
  for (unsigned char ch : e.path) {
    if (ch <= ' ' || ch == 0x7f || ch == '#') {
      throw endpoint_error(text, "the path holds a space or a control character");
    }
  }
  if (authority.find('@') != std::string_view::npos) {
    throw endpoint_error(text, "credentials belong in otlp.headers");
  }
  check_host_and_port(text, split_authority(text, authority, e), e);
  return e;
}

}  // namespace tailcause::core
