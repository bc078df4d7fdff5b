// SPDX-License-Identifier: Apache-2.0
// The OpenTelemetry SDK environment variables that concern a trace exporter
// (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), read the way the
// OpenTelemetry specification says: lists are comma-separated key=value pairs, percent-decoded,
// with blanks around keys and values ignored. They fill the OTLP settings before the
// configuration file is read, so a key the file sets wins. A value that cannot be used is left
// out with a warning (the specification: never fail the process over a bad variable). Pure: the
// caller hands in the variables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"

namespace tailcause::core {

struct OtelEnv {
  std::optional<std::string> endpoint;         // OTEL_EXPORTER_OTLP_ENDPOINT (a base URL)
  std::optional<std::string> traces_endpoint;  // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is)
  std::optional<std::string> headers;          // OTEL_EXPORTER_OTLP_HEADERS
  std::optional<std::string> traces_headers;   // OTEL_EXPORTER_OTLP_TRACES_HEADERS
  std::optional<std::string> timeout;          // OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds)
  std::optional<std::string> traces_timeout;   // OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
  std::optional<std::string> compression;      // OTEL_EXPORTER_OTLP_COMPRESSION: gzip | none
  std::optional<std::string> traces_compression;
  std::optional<std::string> protocol;  // OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: http/protobuf only
  std::optional<std::string> service_name;         // OTEL_SERVICE_NAME
  std::optional<std::string> resource_attributes;  // OTEL_RESOURCE_ATTRIBUTES

  // The variables from `getenv` (a function so tests and the fuzzer need no process env).
  template <typename Getenv>
  static OtelEnv read(Getenv&& getenv) {
    auto get = [&](const char* name) -> std::optional<std::string> {
      const char* v = getenv(name);
      if (!v) return std::nullopt;
      return std::string(v);
    };
    OtelEnv e;
    e.endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT");
    e.traces_endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    e.headers = get("OTEL_EXPORTER_OTLP_HEADERS");
    e.traces_headers = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
    e.timeout = get("OTEL_EXPORTER_OTLP_TIMEOUT");
    e.traces_timeout = get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
    e.compression = get("OTEL_EXPORTER_OTLP_COMPRESSION");
    e.traces_compression = get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION");
    e.protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    if (!e.protocol) e.protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL");
    e.service_name = get("OTEL_SERVICE_NAME");
    e.resource_attributes = get("OTEL_RESOURCE_ATTRIBUTES");
    return e;
  }
};

// A list of key=value pairs separated by commas (W3C Baggage's syntax, as OpenTelemetry's
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES use it): blanks around keys and
// values are trimmed and both are percent-decoded. A malformed member (no '=', an empty key, a
// bad %-escape, a control character after decoding) is left out and described in `errors`;
// the others are kept (a later duplicate wins). Empty members (",,") are ignored.
std::map<std::string, std::string> parse_otel_key_values(std::string_view text,
                                                         std::vector<std::string>& errors);

// Decodes %XX escapes; nullopt on a '%' not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text);

// The OTLP/HTTP traces URL from OTEL_EXPORTER_OTLP_ENDPOINT: the base URL with "v1/traces"
// appended to its path (after a '/' when it has none at its end), as the specification says.
std::string otlp_traces_url_from_base(std::string_view base);

// Applies `env` to `otlp` (to be done before the configuration file is parsed over it) and
// returns one warning per variable that was left out, naming it and why.
std::vector<std::string> apply_otel_env(const OtelEnv& env, OtlpSettings& otlp);

}  // namespace tailcause::core
