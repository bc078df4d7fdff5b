// SPDX-License-Identifier: Apache-2.0
#include "export/otlp_encode.h"

#include <unistd.h>

#include <array>
#include <cstdint>

#include "core/detect/glitch_detector.h"
#include "core/record/stage_kind.h"
#include "otlp/trace_service.pb.h"
#include "core/trace/propagation.h"
#include "core/trace/trace_ids.h"

namespace tailcause::exporter {
namespace {

namespace pb_common = opentelemetry::proto::common::v1;
namespace pb_trace = opentelemetry::proto::trace::v1;
namespace pb_collector = opentelemetry::proto::collector::trace::v1;
using Attributes = google::protobuf::RepeatedPtrField<pb_common::KeyValue>;

// One setter per value type: a string literal must never turn into a bool.
void set_str(Attributes* a, std::string_view key, std::string_view v) {
  auto* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_string_value(std::string(v));
}
void set_int(Attributes* a, std::string_view key, int64_t v) {
  auto* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_int_value(v);
}
void set_double(Attributes* a, std::string_view key, double v) {
  auto* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_double_value(v);
}
void set_bool(Attributes* a, std::string_view key, bool v) {
  auto* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_bool_value(v);
}

// A CLOCK_MONOTONIC time as Unix nanoseconds.
uint64_t unix_ns(uint64_t mono_ns, int64_t offset_ns) {
  const int64_t t = static_cast<int64_t>(mono_ns) + offset_ns;
  return t > 0 ? static_cast<uint64_t>(t) : 0;
}

constexpr uint32_t kGenerationKind = core::stage_kind_value(core::StageKind::generation);

void set_model(Attributes* a, std::string_view detail) {
  const ModelName m = split_model(detail);
  if (!m.provider.empty()) set_str(a, "gen_ai.provider.name", m.provider);
  set_str(a, "gen_ai.request.model", m.model);
}

void set_identity(Attributes* a, const core::Identity& id) {
  set_str(a, "tailcause.tenant", id.tenant);
  set_str(a, "tailcause.agent", id.agent);
  set_int(a, "tailcause.request_id", static_cast<int64_t>(id.request_id));
  set_int(a, "tailcause.pid", id.pid);
}

// The glitch's attributes and an ERROR status whose message is the verdict's evidence.
void set_glitch(pb_trace::Span* span, const core::Glitch* g) {
  auto* a = span->mutable_attributes();
  set_bool(a, "tailcause.glitch", g != nullptr);
  if (!g) return;
  set_str(a, "tailcause.glitch.cause", g->cause);
  set_str(a, "tailcause.glitch.reason", core::glitch_reason_name(g->check.reason));
  set_double(a, "tailcause.glitch.slo_seconds", static_cast<double>(g->check.slo_ns) * 1e-9);
  if (g->check.p99_ns) {
    set_double(a, "tailcause.glitch.p99_seconds", static_cast<double>(*g->check.p99_ns) * 1e-9);
  }
  set_str(a, "tailcause.verdict", g->verdict.evidence);
  span->mutable_status()->set_code(pb_trace::Status::STATUS_CODE_ERROR);
  span->mutable_status()->set_message(g->verdict.evidence);
}

const core::Glitch* request_glitch(const core::RequestTrace& t) {
  for (const core::Glitch& g : t.glitches) {
    if (g.stage == core::GlitchDetector::kRequestStage && g.start_ns == t.request.start_ns)
      return &g;
  }
  return nullptr;
}

void add_request_span(const core::RequestTrace& t, const std::string& trace_id,
                      const std::string& span_id, pb_trace::ScopeSpans* scope) {
  const core::RequestRecord& r = t.request;
  auto* span = scope->add_spans();
  span->set_trace_id(trace_id);
  span->set_span_id(span_id);
  span->set_name("invoke_agent " + r.id.agent);
  // A child of the agent's own span (its traceparent) is in-process work: INTERNAL, as the
  // GenAI conventions say of an in-process agent. Without one it stands for the request the
  // agent served: SERVER, a root.
  const auto parent = t.trace_id_from_agent && r.id.parent_span_id.size() == 16
                          ? hex_to_bytes(r.id.parent_span_id)
                          : std::nullopt;
  if (parent) span->set_parent_span_id(*parent);
  span->set_kind(parent ? pb_trace::Span::SPAN_KIND_INTERNAL : pb_trace::Span::SPAN_KIND_SERVER);
  span->set_start_time_unix_nano(unix_ns(r.start_ns, t.unix_offset_ns));
  span->set_end_time_unix_nano(unix_ns(r.end_ns, t.unix_offset_ns));
  auto* a = span->mutable_attributes();
  set_str(a, "gen_ai.operation.name", "invoke_agent");
  set_str(a, "gen_ai.agent.name", r.id.agent);
  if (r.tokens > 0) set_int(a, "gen_ai.usage.output_tokens", static_cast<int64_t>(r.tokens));
  for (const core::StageRecord& s : t.stages) {  // the model of its first generation stage
    if (s.kind != kGenerationKind || s.detail.empty()) continue;
    set_model(a, s.detail);
    break;
  }
  // A failed request: its status code, the class of error the agent reported.
  if (r.status != 0) set_str(a, "error.type", std::to_string(r.status));
  set_identity(a, r.id);
  set_int(a, "tailcause.status", r.status);
  set_bool(a, "tailcause.trace_id_from_agent", t.trace_id_from_agent);
  set_int(a, "tailcause.glitches", static_cast<int64_t>(t.glitches.size()));
  if (auto ttft = r.time_to_first_token()) set_double(a, "tailcause.time_to_first_token", *ttft);
  if (r.first_token_ns) {  // without token times the per-token figure means nothing
    if (auto tpot = r.time_per_output_token())
      set_double(a, "tailcause.time_per_output_token", *tpot);
  }

  const core::Glitch* g = request_glitch(t);
  set_glitch(span, g);
  for (const core::Glitch& each : t.glitches) {
    if (&each != g) continue;  // one event per request-level glitch
    auto* ev = span->add_events();
    ev->set_name("glitch");
    ev->set_time_unix_nano(unix_ns(each.end_ns, t.unix_offset_ns));
    set_str(ev->mutable_attributes(), "tailcause.glitch.cause", each.cause);
    set_str(ev->mutable_attributes(), "tailcause.glitch.reason",
            core::glitch_reason_name(each.check.reason));
    set_str(ev->mutable_attributes(), "tailcause.verdict", each.verdict.evidence);
  }
  if (!g && r.status != 0) {
    span->mutable_status()->set_code(pb_trace::Status::STATUS_CODE_ERROR);
    span->mutable_status()->set_message("request status " + std::to_string(r.status));
  }
}

void add_stage_span(const core::RequestTrace& t, size_t index, const std::string& trace_id,
                    const std::string& parent_id, const std::string& trace_hex,
                    pb_trace::ScopeSpans* scope) {
  const core::StageRecord& s = t.stages[index];
  auto* span = scope->add_spans();
  span->set_trace_id(trace_id);
  span->set_span_id(*hex_to_bytes(core::derive_span_id(trace_hex, s.start_ns, s.tid)));
  span->set_parent_span_id(parent_id);
  const bool model = s.kind == kGenerationKind && !s.detail.empty();
  span->set_name(model ? stage_span_name(s.stage) + " " + split_model(s.detail).model
                       : stage_span_name(s.stage));
  span->set_kind(pb_trace::Span::SPAN_KIND_INTERNAL);
  span->set_start_time_unix_nano(unix_ns(s.start_ns, t.unix_offset_ns));
  span->set_end_time_unix_nano(unix_ns(s.end_ns, t.unix_offset_ns));
  auto* a = span->mutable_attributes();
  if (auto op = gen_ai_operation(s.stage)) set_str(a, "gen_ai.operation.name", *op);
  if (model) set_model(a, s.detail);
  // A stage cut short by the thread's exit.
  if (s.aborted()) set_str(a, "error.type", "aborted");
  set_identity(a, s.id);
  set_str(a, "tailcause.stage", s.stage);
  set_int(a, "tailcause.tid", s.tid);
  if (s.worker()) set_bool(a, "tailcause.worker", true);
  if (s.aborted()) set_bool(a, "tailcause.aborted", true);
  for (core::Component c : core::kAllComponents) {
    const uint64_t ns = s.component_ns[core::index_of(c)];
    if (ns == 0) continue;
    set_double(a, component_attribute(c), static_cast<double>(ns) * 1e-9);
  }
  set_int(a, "tailcause.page_cache_misses", static_cast<int64_t>(s.page_cache_misses));
  set_int(a, "tailcause.major_faults", static_cast<int64_t>(s.major_faults));
  set_int(a, "tailcause.bytes_read", static_cast<int64_t>(s.bytes_read));
  set_glitch(span, t.stage_glitch(index));
  // The glitch propagation path: the thread this stage's waits were resolved through, and a
  // link to that thread's span when it ran one in this request.
  if (const auto edge = core::waker_edge(t, index)) {
    const core::Waker& w = *s.waker;
    set_int(a, "tailcause.waited_on.tid", w.tid);
    set_str(a, "tailcause.waited_on.edge", core::propagation_edge_name(*edge));
    set_double(a, "tailcause.waited_on.seconds", static_cast<double>(w.ns) * 1e-9);
    set_str(a, "tailcause.waited_on.component", core::component_name(w.component));
    if (const auto other = core::waker_span(t, index)) {
      const core::StageRecord& o = t.stages[*other];
      auto* link = span->add_links();
      link->set_trace_id(trace_id);
      link->set_span_id(*hex_to_bytes(core::derive_span_id(trace_hex, o.start_ns, o.tid)));
      set_str(link->mutable_attributes(), "tailcause.waited_on.edge",
              core::propagation_edge_name(*edge));
      set_double(link->mutable_attributes(), "tailcause.waited_on.seconds",
                 static_cast<double>(w.ns) * 1e-9);
    }
  }
}

}  // namespace

OtlpResourceInfo local_resource(std::string service_name) {
  OtlpResourceInfo info;
  info.service_name = std::move(service_name);
  info.service_version = TAILCAUSE_VERSION_STRING;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0) info.host_name = host.data();
  return info;
}

ModelName split_model(std::string_view detail) {
  const size_t colon = detail.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == detail.size()) {
    return {"", std::string(detail)};
  }
  return {std::string(detail.substr(0, colon)), std::string(detail.substr(colon + 1))};
}

std::string component_attribute(core::Component c) {
  return std::string("tailcause.component.") + core::component_name(c);
}

std::optional<std::string_view> gen_ai_operation(std::string_view stage) {
  if (stage == "embedding") return "embeddings";
  if (stage == "generation") return "chat";
  if (stage == "tool") return "execute_tool";
  return std::nullopt;
}

std::string stage_span_name(std::string_view stage) {
  return std::string(gen_ai_operation(stage).value_or(stage));
}

std::optional<std::string> hex_to_bytes(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string encode_traces(std::span<const core::RequestTrace> traces,
                          const OtlpResourceInfo& resource, size_t* skipped) {
  pb_collector::ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  auto* res_attrs = rs->mutable_resource()->mutable_attributes();
  set_str(res_attrs, "service.name", resource.service_name);
  if (!resource.service_version.empty())
    set_str(res_attrs, "service.version", resource.service_version);
  if (!resource.host_name.empty()) set_str(res_attrs, "host.name", resource.host_name);
  for (const auto& [key, value] : resource.attributes) {
    if (key == "service.name" || key == "service.version" || key == "host.name") continue;
    set_str(res_attrs, key, value);
  }
  auto* scope = rs->add_scope_spans();
  scope->mutable_scope()->set_name("tailcause");
  scope->mutable_scope()->set_version(resource.service_version);

  size_t bad = 0;
  for (const core::RequestTrace& t : traces) {
    auto trace_id = t.trace_id.size() == 32 ? hex_to_bytes(t.trace_id) : std::nullopt;
    if (!trace_id) {
      ++bad;
      continue;
    }
    const std::string request_span = *hex_to_bytes(core::derive_span_id(t.trace_id, 0, 0));
    add_request_span(t, *trace_id, request_span, scope);
    for (size_t i = 0; i < t.stages.size(); ++i) {
      add_stage_span(t, i, *trace_id, request_span, t.trace_id, scope);
    }
  }
  if (skipped) *skipped = bad;
  return req.SerializeAsString();
}

}  // namespace tailcause::exporter
