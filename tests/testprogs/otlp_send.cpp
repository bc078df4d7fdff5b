// SPDX-License-Identifier: Apache-2.0
// Sends two known traces through OtlpExporter (encode + batch + POST) to an OTLP/HTTP endpoint,
// then prints, as JSON on stdout, the spans a receiver must have decoded: ids, parent links,
// names, kinds, times, status and the attributes to compare. Used by
// tests/e2e/test_otlp_receiver.sh, whose receiver decodes with the OpenTelemetry project's own
// OTLP definitions.
//   otlp_send http://127.0.0.1:PORT/v1/traces
// Exit 0 when the exporter reports every span exported, 1 otherwise, 2 on bad usage.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/trace/trace_ids.h"
#include "core/record/stage_kind.h"
#include "core/record/traceparent.h"
#include "export/otlp_encode.h"
#include "export/otlp_exporter.h"

using namespace tailcause;
using core::Component;
using nlohmann::json;

namespace {

constexpr uint64_t ms = 1'000'000;
constexpr int64_t kOffset = 1'700'000'000'000'000'000;  // 2023-11-14, as Unix ns

core::StageRecord stage(const core::Identity& id, const char* name, uint64_t start, uint64_t end,
                        uint32_t tid) {
  core::StageRecord s;
  s.id = id;
  s.stage = name;
  s.tid = tid;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

// A glitchy request whose agent passed its own trace id: embedding, retrieval, a throttled
// generation (the glitch), a tool call.
core::RequestTrace glitch_trace() {
  core::RequestTrace t;
  t.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  t.trace_id_from_agent = true;
  t.unix_offset_ns = kOffset;
  auto& r = t.request;
  r.id.request_id = 7;
  r.id.pid = 4242;
  r.id.tenant = "acme";
  r.id.agent = "rag";
  // The agent passed its W3C traceparent: read by the daemon's own parser.
  const auto tp =
      core::parse_trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  r.id.trace_id = tp->trace_id;
  r.id.parent_span_id = tp->parent_span_id;
  r.id.trace_flags = tp->flags;
  r.start_ns = 1000 * ms;
  r.end_ns = 2000 * ms;
  r.tokens = 12;
  auto emb = stage(r.id, "embedding", 1100 * ms, 1200 * ms, 4243);
  emb.component_ns[size_t(Component::on_cpu)] = 50 * ms;
  emb.component_ns[size_t(Component::block_io)] = 30 * ms;
  emb.component_ns[size_t(Component::unattributed)] = 20 * ms;
  emb.page_cache_misses = 1240;
  auto gen = stage(r.id, "generation", 1300 * ms, 1900 * ms, 4244);
  gen.component_ns[size_t(Component::cpu_throttled)] = 400 * ms;
  gen.component_ns[size_t(Component::on_cpu)] = 150 * ms;
  gen.component_ns[size_t(Component::unattributed)] = 50 * ms;
  gen.kind =
      core::stage_kind_value(core::StageKind::generation);  // naming its model, as the SDK does
  gen.detail = "openai:gpt-4o-mini";
  t.stages = {emb, stage(r.id, "retrieval", 1200 * ms, 1300 * ms, 4243), gen,
              stage(r.id, "tool", 1900 * ms, 1950 * ms, 4243)};
  core::Glitch g;
  g.tenant = "acme";
  g.agent = "rag";
  g.stage = "generation";
  g.trace_id = t.trace_id;
  g.check.reason = core::GlitchReason::over_slo;
  g.check.wall_ns = gen.wall_ns();
  g.check.slo_ns = 200 * ms;
  g.verdict.evidence = "generation 600 ms, 67% cpu_throttled: 12 throttled periods";
  g.start_ns = gen.start_ns;
  g.end_ns = gen.end_ns;
  g.cause = "cpu_throttled";
  t.glitches = {g};
  return t;
}

// A normal request with a derived trace id and one stage.
core::RequestTrace normal_trace() {
  core::RequestTrace t;
  t.trace_id = core::derive_trace_id(4242, 8, 0x5eed);
  t.unix_offset_ns = kOffset;
  auto& r = t.request;
  r.id.request_id = 8;
  r.id.pid = 4242;
  r.id.tenant = "globex";
  r.id.agent = "chatbot";
  r.start_ns = 3000 * ms;
  r.end_ns = 3100 * ms;
  r.status = 2;  // failed: error.type
  auto emb = stage(r.id, "embedding", 3010 * ms, 3090 * ms, 4245);
  emb.component_ns[size_t(Component::on_cpu)] = 80 * ms;
  t.stages = {emb};
  return t;
}

json component_attrs(const core::StageRecord& s) {
  json a = json::object();
  for (size_t c = 0; c < core::kComponents; ++c) {
    if (s.component_ns[c]) {
      a[std::string("tailcause.component.") + core::kComponentNames[c]] = s.component_ns[c] * 1e-9;
    }
  }
  return a;
}

// What the receiver must decode for `t`.
void expect(const core::RequestTrace& t, json& out) {
  const std::string root = core::derive_span_id(t.trace_id, 0, 0);
  const auto& r = t.request;
  const bool child = !r.id.parent_span_id.empty();
  json req = {{"trace_id", t.trace_id},
              {"span_id", root},
              {"parent_span_id", r.id.parent_span_id},
              {"name", "invoke_agent " + r.id.agent},
              {"kind", child ? "SPAN_KIND_INTERNAL" : "SPAN_KIND_SERVER"},
              {"start_time_unix_nano", std::to_string(r.start_ns + kOffset)},
              {"end_time_unix_nano", std::to_string(r.end_ns + kOffset)},
              {"status_code", r.status ? "STATUS_CODE_ERROR" : "STATUS_CODE_UNSET"},
              {"attributes",
               {{"gen_ai.operation.name", "invoke_agent"},
                {"gen_ai.agent.name", r.id.agent},
                {"tailcause.tenant", r.id.tenant},
                {"tailcause.agent", r.id.agent},
                {"tailcause.request_id", r.id.request_id},
                {"tailcause.pid", r.id.pid},
                {"tailcause.glitch", false}}}};
  if (r.tokens) req["attributes"]["gen_ai.usage.output_tokens"] = r.tokens;
  if (r.status) req["attributes"]["error.type"] = std::to_string(r.status);
  for (const auto& s : t.stages) {
    if (s.detail.empty()) continue;
    const auto m = exporter::split_model(s.detail);
    req["attributes"]["gen_ai.request.model"] = m.model;
    break;
  }
  out.push_back(req);
  for (size_t i = 0; i < t.stages.size(); ++i) {
    const auto& s = t.stages[i];
    const core::Glitch* g = t.stage_glitch(i);
    json a = component_attrs(s);
    a["tailcause.stage"] = s.stage;
    a["tailcause.tenant"] = s.id.tenant;
    a["tailcause.tid"] = s.tid;
    a["tailcause.page_cache_misses"] = s.page_cache_misses;
    a["tailcause.glitch"] = g != nullptr;
    if (auto op = exporter::gen_ai_operation(s.stage))
      a["gen_ai.operation.name"] = std::string(*op);
    std::string name = exporter::stage_span_name(s.stage);
    if (!s.detail.empty()) {
      const auto m = exporter::split_model(s.detail);
      a["gen_ai.request.model"] = m.model;
      a["gen_ai.provider.name"] = m.provider;
      name += " " + m.model;
    }
    if (g) {
      a["tailcause.glitch.cause"] = g->cause;
      a["tailcause.verdict"] = g->verdict.evidence;
    }
    json span = {{"trace_id", t.trace_id},
                 {"span_id", core::derive_span_id(t.trace_id, s.start_ns, s.tid)},
                 {"parent_span_id", root},
                 {"name", name},
                 {"kind", "SPAN_KIND_INTERNAL"},
                 {"start_time_unix_nano", std::to_string(s.start_ns + kOffset)},
                 {"end_time_unix_nano", std::to_string(s.end_ns + kOffset)},
                 {"status_code", g ? "STATUS_CODE_ERROR" : "STATUS_CODE_UNSET"},
                 {"attributes", a}};
    if (g) span["status_message"] = g->verdict.evidence;
    out.push_back(span);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: otlp_send http://HOST:PORT/v1/traces\n");
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));  // stdout carries the JSON
  core::OtlpSettings settings;
  settings.endpoint = argv[1];
  settings.service_name = "tailcause-otlp-send";
  settings.headers = {{"X-Tailcause-Test", "otlp-send"}};
  settings.sample_normal = 1.0;  // export the normal trace too
  settings.budget_spans_per_s = 1000;
  settings.timeout_ms = 5000;
  settings.compression = "gzip";
  settings.resource_attributes = {{"deployment.environment", "e2e"}};

  const std::vector<core::RequestTrace> traces = {glitch_trace(), normal_trace()};
  json spans = json::array();
  size_t total = 0;
  for (const auto& t : traces) {
    expect(t, spans);
    total += t.span_count();
  }
  exporter::OtlpTuning tuning;
  tuning.shutdown_grace = std::chrono::seconds(10);  // stop() sends everything: allow for retries
  tuning.initial_backoff = std::chrono::milliseconds(100);
  exporter::OtlpExporter exporter(settings, tuning);
  for (const auto& t : traces) exporter.submit(t);
  exporter.stop();

  const auto stats = exporter.stats();
  std::printf("%s\n",
              json{{"service_name", settings.service_name}, {"spans", spans}}.dump(1).c_str());
  if (stats.exported != total) {
    std::fprintf(stderr, "otlp_send: exported %llu of %zu spans\n",
                 static_cast<unsigned long long>(stats.exported), total);
    for (const auto& [reason, n] : stats.dropped) {
      if (n)
        std::fprintf(stderr, "otlp_send: dropped %s: %llu\n", reason.c_str(),
                     static_cast<unsigned long long>(n));
    }
    for (const auto& [kind, n] : stats.errors) {
      std::fprintf(stderr, "otlp_send: errors %s: %llu\n", kind.c_str(),
                   static_cast<unsigned long long>(n));
    }
    return 1;
  }
  return 0;
}
