// SPDX-License-Identifier: Apache-2.0
// The OTEL_* environment variables read into the OTLP settings (otel_env.h): one function per
// setting they fill, each warning about what it cannot use.
#include "core/trace/otel_env.h"

#include <fmt/format.h>

#include <charconv>

namespace tailcause::core {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool has_control(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Only printable text is echoed back in a warning (a variable may hold anything).
std::string shown(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 80)) {
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > 80) out += "...";
  return out;
}

// An HTTP header name (RFC 9110 token).
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    const bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::optional<uint32_t> parse_ms(std::string_view text) {
  text = trim(text);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v == 0 ||
      v > 3'600'000) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

std::map<std::string, std::string> parse_otel_key_values(std::string_view text,
                                                         std::vector<std::string>& errors) {
  std::map<std::string, std::string> out;
  size_t member_no = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view member = trim(text.substr(0, comma));
    ++member_no;
    if (!member.empty()) {
      const size_t eq = member.find('=');
      auto bad = [&](const char* why) {
        errors.push_back(fmt::format("member {} '{}': {}", member_no, shown(member), why));
      };
      if (eq == std::string_view::npos) {
        bad("expected key=value");
      } else {
        auto key = percent_decode(trim(member.substr(0, eq)));
        auto value = percent_decode(trim(member.substr(eq + 1)));
        if (!key || !value) {
          bad("a '%' not followed by two hex digits");
        } else if (key->empty()) {
          bad("empty key");
        } else if (has_control(*key) || has_control(*value)) {
          bad("a control character");
        } else {
          out[*key] = std::move(*value);
        }
      }
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string otlp_traces_url_from_base(std::string_view base) {
  std::string url(base);
  if (url.empty() || url.back() != '/') url += '/';
  // A base of scheme://host[:port] has no path: the '/' just added starts it.
  return url + "v1/traces";
}

namespace {

// The warnings apply_otel_env() returns: "VAR: why; ignored" for a variable that was not used.
struct Warnings {
  std::vector<std::string> lines;
  void ignored(const char* var, const std::string& why) {
    lines.push_back(fmt::format("{}: {}; ignored", var, why));
  }
};

// The traces-specific variable is used as is; the general one is a base URL.
void apply_endpoint(const OtelEnv& env, OtlpSettings& otlp, Warnings& w) {
  std::optional<std::string> url;
  const char* url_var = nullptr;
  if (env.traces_endpoint && !trim(*env.traces_endpoint).empty()) {
    url = std::string(trim(*env.traces_endpoint));
    url_var = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
  } else if (env.endpoint && !trim(*env.endpoint).empty()) {
    url = otlp_traces_url_from_base(trim(*env.endpoint));
    url_var = "OTEL_EXPORTER_OTLP_ENDPOINT";
  }
  if (!url) return;
  try {
    parse_otlp_endpoint(*url);
    otlp.endpoint = *url;
  } catch (const ConfigError& e) {
    w.ignored(url_var, e.what());
  }
}

// tailcause sends http/protobuf only: another protocol is reported (no setting to leave out).
void check_protocol(const OtelEnv& env, Warnings& w) {
  if (!env.protocol) return;
  const std::string_view p = trim(*env.protocol);
  if (p != "http/protobuf") {
    w.lines.push_back(fmt::format(
        "OTEL_EXPORTER_OTLP_PROTOCOL: '{}' is not supported, tailcause sends http/protobuf",
        shown(p)));
  }
}

void apply_headers(const OtelEnv& env, OtlpSettings& otlp, Warnings& w) {
  for (const auto& [var, value] :
       {std::pair{"OTEL_EXPORTER_OTLP_HEADERS", &env.headers},
        std::pair{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", &env.traces_headers}}) {
    if (!*value) continue;
    std::vector<std::string> errors;
    for (auto& [name, v] : parse_otel_key_values(**value, errors)) {
      if (!is_token(name)) {
        errors.push_back(fmt::format("'{}' is not an HTTP header name", shown(name)));
        continue;
      }
      otlp.headers[name] = v;  // the traces-specific list comes second and wins
    }
    for (const auto& e : errors) w.ignored(var, e);
  }
}

void apply_timeouts(const OtelEnv& env, OtlpSettings& otlp, Warnings& w) {
  for (const auto& [var, value] :
       {std::pair{"OTEL_EXPORTER_OTLP_TIMEOUT", &env.timeout},
        std::pair{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", &env.traces_timeout}}) {
    if (!*value) continue;
    if (auto ms = parse_ms(**value)) {
      otlp.timeout_ms = *ms;
    } else {
      w.ignored(var, fmt::format("'{}' is not a whole number of milliseconds from 1 to 3600000",
                                 shown(**value)));
    }
  }
}

void apply_compression(const OtelEnv& env, OtlpSettings& otlp, Warnings& w) {
  for (const auto& [var, value] :
       {std::pair{"OTEL_EXPORTER_OTLP_COMPRESSION", &env.compression},
        std::pair{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", &env.traces_compression}}) {
    if (!*value) continue;
    const std::string_view c = trim(**value);
    if (c == "gzip" || c == "none") {
      otlp.compression = std::string(c);
    } else {
      w.ignored(var, fmt::format("'{}' is not gzip or none", shown(c)));
    }
  }
}

// OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME, which wins over a service.name in it.
void apply_resource(const OtelEnv& env, OtlpSettings& otlp, Warnings& w) {
  if (env.resource_attributes) {
    std::vector<std::string> errors;
    for (auto& [k, v] : parse_otel_key_values(*env.resource_attributes, errors)) {
      if (k == "service.name") {
        if (!v.empty()) otlp.service_name = v;
        continue;
      }
      otlp.resource_attributes[k] = std::move(v);
    }
    for (const auto& e : errors) w.ignored("OTEL_RESOURCE_ATTRIBUTES", e);
  }
  if (env.service_name) {
    const std::string_view name = trim(*env.service_name);
    if (name.empty() || has_control(name)) {
      w.ignored("OTEL_SERVICE_NAME", "empty or holds a control character");
    } else {
      otlp.service_name = std::string(name);
    }
  }
}

}  // namespace

std::vector<std::string> apply_otel_env(const OtelEnv& env, OtlpSettings& otlp) {
  Warnings w;
  apply_endpoint(env, otlp, w);
  check_protocol(env, w);
  apply_headers(env, otlp, w);
  apply_timeouts(env, otlp, w);
  apply_compression(env, otlp, w);
  apply_resource(env, otlp, w);
  return std::move(w.lines);
}

}  // namespace tailcause::core
