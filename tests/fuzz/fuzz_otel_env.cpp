// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the hand-written parsers of outside text in the OpenTelemetry fit: the
// OTEL_EXPORTER_OTLP_HEADERS / OTEL_RESOURCE_ATTRIBUTES list syntax (and all the variables
// applied together) and the W3C traceparent a traced process passes through a USDT argument.
// Never a crash; a parsed traceparent has the sizes it claims and prints back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/otel_env.h"
#include "core/record/traceparent.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string text(reinterpret_cast<const char*>(data), size);

  std::vector<std::string> errors;
  for (const auto& [k, v] : parse_otel_key_values(text, errors)) {
    if (k.empty()) std::abort();
    for (unsigned char c : k + v) {
      if (c < 0x20 || c == 0x7f) std::abort();
    }
  }
  OtelEnv env;
  env.endpoint = env.headers = env.timeout = env.compression = env.service_name =
      env.resource_attributes = env.protocol = text;
  OtlpSettings otlp;
  apply_otel_env(env, otlp);
  for (const auto& [name, value] : otlp.headers) {
    if (name.empty() || value.find_first_of("\r\n") != std::string::npos) std::abort();
  }
  if (!otlp.endpoint.empty()) parse_otlp_endpoint(otlp.endpoint);  // must not throw

  if (auto tp = parse_trace_context(text)) {
    if (tp->trace_id.size() != 32) std::abort();
    if (!tp->parent_span_id.empty()) {
      if (tp->parent_span_id.size() != 16) std::abort();
      const std::string back =
          text.substr(0, 3) + tp->trace_id + "-" + tp->parent_span_id + "-" + text.substr(53, 2);
      if (text.substr(0, kTraceparentChars) != back) std::abort();
    }
  }
  return 0;
}
