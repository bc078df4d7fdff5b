// SPDX-License-Identifier: Apache-2.0
// Finished requests (core::RequestTrace) as an OTLP/HTTP trace export body: one serialised
// ExportTraceServiceRequest (protobuf) holding a request span per trace and one INTERNAL span
// per stage whose parent is the request span. The request span is a child (INTERNAL) of the
// agent's span when the agent passed a W3C traceparent, else a root (SERVER). Attributes follow
// the OpenTelemetry GenAI conventions where one applies (gen_ai.operation.name invoke_agent /
// embeddings / chat / execute_tool; gen_ai.request.model and gen_ai.provider.name from a
// generation stage's "[provider:]model"; error.type on a failed request) and carry the
// breakdown, the counters and the verdict under tailcause.*. Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/detect/request_trace.h"
#include "core/record/schema.h"

namespace tailcause::exporter {

// Who sends the spans: the OTLP resource and scope.
struct OtlpResourceInfo {
  std::string service_name = "tailcause";
  std::string service_version;  // the scope's version too
  std::string host_name;
  // More resource attributes (otlp.resource_attributes, OTEL_RESOURCE_ATTRIBUTES): string values;
  // one naming service.name, service.version or host.name gives way to the fields above.
  std::map<std::string, std::string> attributes;
};

// service_name, this build's version and this host's name.
OtlpResourceInfo local_resource(std::string service_name);

// The serialised ExportTraceServiceRequest for `traces` (one resource, one scope). A trace whose
// id is not 32 hex digits cannot be sent and is left out, counted in *skipped.
std::string encode_traces(std::span<const core::RequestTrace> traces,
                          const OtlpResourceInfo& resource, size_t* skipped = nullptr);

// Building blocks, public for tests.
// A generation stage's "[provider:]model" split at its first ':' ("ollama:llama3:8b" is
// provider ollama, model llama3:8b); without a provider part, all of it is the model.
struct ModelName {
  std::string provider, model;
};
ModelName split_model(std::string_view detail);
// The span attribute of a component's seconds: "tailcause.component.runqueue".
std::string component_attribute(core::Component c);
// The GenAI operation of a stage ("embeddings", "chat", "execute_tool"), or nullopt.
std::optional<std::string_view> gen_ai_operation(std::string_view stage);
// "embeddings" / "chat" / "execute_tool" for those stages, else the stage name.
std::string stage_span_name(std::string_view stage);
// Lower- or upper-case hex to bytes; nullopt on an odd length or a non-hex digit.
std::optional<std::string> hex_to_bytes(std::string_view hex);

}  // namespace tailcause::exporter
