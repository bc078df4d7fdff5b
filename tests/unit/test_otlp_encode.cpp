// SPDX-License-Identifier: Apache-2.0
// RequestTrace -> ExportTraceServiceRequest, decoded back with the generated protobuf classes:
// ids, parent links, kinds, names, times, GenAI and tailcause attributes, glitch status.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/trace/trace_ids.h"
#include "export/otlp_encode.h"
#include "otlp/trace_service.pb.h"
#include "stage_builder.h"

namespace tailcause::exporter {
namespace {

using core::Component;
namespace pb = opentelemetry::proto;
constexpr uint64_t ms = 1'000'000;
constexpr int64_t kOffset = 1'700'000'000'000'000'000;
const std::string kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";

using Value = std::variant<std::string, bool, int64_t, double>;
std::map<std::string, Value> attrs(
    const google::protobuf::RepeatedPtrField<pb::common::v1::KeyValue>& kvs) {
  std::map<std::string, Value> out;
  for (const auto& kv : kvs) {
    const auto& v = kv.value();
    EXPECT_EQ(out.count(kv.key()), 0u) << "duplicate attribute " << kv.key();
    switch (v.value_case()) {
      case pb::common::v1::AnyValue::kStringValue: out[kv.key()] = v.string_value(); break;
      case pb::common::v1::AnyValue::kBoolValue: out[kv.key()] = v.bool_value(); break;
      case pb::common::v1::AnyValue::kIntValue: out[kv.key()] = v.int_value(); break;
      case pb::common::v1::AnyValue::kDoubleValue: out[kv.key()] = v.double_value(); break;
      default: ADD_FAILURE() << kv.key() << " has no value";
    }
  }
  return out;
}

std::string bytes(const std::string& hex) { return *hex_to_bytes(hex); }

core::StageRecord stage(const char* name, uint64_t start, uint64_t end, uint32_t tid) {
  return testing::StageBuilder()
      .request(7)
      .pid(4242)
      .tenant("acme")
      .agent("rag")
      .trace_id(kTraceId)
      .stage(name)
      .tid(tid)
      .start_ns(start)
      .end_ns(end)
      .build();
}

core::RequestTrace sample_trace() {
  core::RequestTrace t;
  t.trace_id = kTraceId;
  t.trace_id_from_agent = true;
  t.unix_offset_ns = kOffset;
  auto& r = t.request;
  r.id = stage("x", 0, 0, 0).id;
  r.start_ns = 1000 * ms;
  r.end_ns = 2000 * ms;
  r.tokens = 12;
  r.first_token_ns = 1500 * ms;
  r.last_token_ns = 1900 * ms;

  auto emb = stage("embedding", 1100 * ms, 1200 * ms, 4243);
  emb.component_ns[size_t(Component::on_cpu)] = 50 * ms;
  emb.component_ns[size_t(Component::block_io)] = 30 * ms;
  emb.component_ns[size_t(Component::unattributed)] = 20 * ms;
  emb.page_cache_misses = 1240;
  emb.major_faults = 3;
  emb.bytes_read = 1 << 20;
  auto gen = stage("generation", 1300 * ms, 1900 * ms, 4244);
  gen.component_ns[size_t(Component::cpu_throttled)] = 400 * ms;
  gen.component_ns[size_t(Component::on_cpu)] = 150 * ms;
  gen.component_ns[size_t(Component::unattributed)] = 50 * ms;
  t.stages = {emb, stage("retrieval", 1200 * ms, 1300 * ms, 4243), gen,
              stage("tool", 1900 * ms, 1950 * ms, 4243),
              stage("rerank", 1950 * ms, 1990 * ms, 4243)};

  core::Glitch g;
  g.tenant = "acme";
  g.agent = "rag";
  g.stage = "generation";
  g.trace_id = kTraceId;
  g.check.reason = core::GlitchReason::over_slo;
  g.check.wall_ns = 600 * ms;
  g.check.slo_ns = 200 * ms;
  g.verdict.evidence = "generation 600 ms, 67% cpu_throttled: 12 throttled periods";
  g.start_ns = gen.start_ns;
  g.end_ns = gen.end_ns;
  g.cause = "cpu_throttled";
  core::Glitch rg = g;
  rg.stage = "request";
  rg.check.reason = core::GlitchReason::both;
  rg.check.wall_ns = 1000 * ms;
  rg.check.slo_ns = 800 * ms;
  rg.check.p99_ns = 400 * ms;
  rg.verdict.evidence = "request 1.00 s";
  rg.start_ns = r.start_ns;
  rg.end_ns = r.end_ns;
  rg.cause = "slow";
  t.glitches = {g, rg};
  return t;
}

pb::collector::trace::v1::ExportTraceServiceRequest decode(
    const std::vector<core::RequestTrace>& traces, size_t* skipped = nullptr) {
  OtlpResourceInfo res{"tailcause-test", "9.9.9", "node-1", {}};
  pb::collector::trace::v1::ExportTraceServiceRequest req;
  EXPECT_TRUE(req.ParseFromString(encode_traces(traces, res, skipped)));
  return req;
}

TEST(OtlpEncode, ResourceAndScope) {
  const auto req = decode({sample_trace()});
  ASSERT_EQ(req.resource_spans_size(), 1);
  const auto& rs = req.resource_spans(0);
  auto ra = attrs(rs.resource().attributes());
  EXPECT_EQ(std::get<std::string>(ra["service.name"]), "tailcause-test");
  EXPECT_EQ(std::get<std::string>(ra["service.version"]), "9.9.9");
  EXPECT_EQ(std::get<std::string>(ra["host.name"]), "node-1");
  ASSERT_EQ(rs.scope_spans_size(), 1);
  EXPECT_EQ(rs.scope_spans(0).scope().name(), "tailcause");
  EXPECT_EQ(rs.scope_spans(0).spans_size(), 6);
}

TEST(OtlpEncode, RequestSpan) {
  const auto req = decode({sample_trace()});
  const auto& span = req.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(span.trace_id(), bytes(kTraceId));
  EXPECT_EQ(span.trace_id().size(), 16u);
  EXPECT_EQ(span.span_id(), bytes(core::derive_span_id(kTraceId, 0, 0)));
  EXPECT_EQ(span.span_id().size(), 8u);
  EXPECT_TRUE(span.parent_span_id().empty());
  EXPECT_EQ(span.kind(), pb::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(span.name(), "invoke_agent rag");
  EXPECT_EQ(span.start_time_unix_nano(), uint64_t(kOffset) + 1000 * ms);
  EXPECT_EQ(span.end_time_unix_nano(), uint64_t(kOffset) + 2000 * ms);
  auto a = attrs(span.attributes());
  EXPECT_EQ(std::get<std::string>(a["gen_ai.operation.name"]), "invoke_agent");
  EXPECT_EQ(std::get<std::string>(a["gen_ai.agent.name"]), "rag");
  EXPECT_EQ(std::get<int64_t>(a["gen_ai.usage.output_tokens"]), 12);
  EXPECT_EQ(std::get<std::string>(a["tailcause.tenant"]), "acme");
  EXPECT_EQ(std::get<std::string>(a["tailcause.agent"]), "rag");
  EXPECT_EQ(std::get<int64_t>(a["tailcause.request_id"]), 7);
  EXPECT_EQ(std::get<int64_t>(a["tailcause.pid"]), 4242);
  EXPECT_EQ(std::get<int64_t>(a["tailcause.glitches"]), 2);
  EXPECT_TRUE(std::get<bool>(a["tailcause.trace_id_from_agent"]));
  EXPECT_DOUBLE_EQ(std::get<double>(a["tailcause.time_to_first_token"]), 0.5);
  // The request's own glitch: attributes, ERROR status, and one "glitch" event.
  EXPECT_TRUE(std::get<bool>(a["tailcause.glitch"]));
  EXPECT_EQ(std::get<std::string>(a["tailcause.glitch.cause"]), "slow");
  EXPECT_EQ(std::get<std::string>(a["tailcause.glitch.reason"]), "both");
  EXPECT_DOUBLE_EQ(std::get<double>(a["tailcause.glitch.p99_seconds"]), 0.4);
  EXPECT_EQ(std::get<std::string>(a["tailcause.verdict"]), "request 1.00 s");
  EXPECT_EQ(span.status().code(), pb::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(span.status().message(), "request 1.00 s");
  ASSERT_EQ(span.events_size(), 1);
  EXPECT_EQ(span.events(0).name(), "glitch");
  EXPECT_EQ(span.events(0).time_unix_nano(), uint64_t(kOffset) + 2000 * ms);
  EXPECT_EQ(std::get<std::string>(attrs(span.events(0).attributes())["tailcause.glitch.cause"]),
            "slow");
}

TEST(OtlpEncode, StageSpansAreChildrenOfTheRequest) {
  const auto t = sample_trace();
  const auto req = decode({t});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  const std::string parent = bytes(core::derive_span_id(kTraceId, 0, 0));
  const std::vector<std::string> names = {"embeddings", "retrieval", "chat", "execute_tool",
                                          "rerank"};
  const std::vector<const char*> ops = {"embeddings", nullptr, "chat", "execute_tool", nullptr};
  for (size_t i = 0; i < t.stages.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const auto& span = spans[static_cast<int>(i) + 1];
    const auto& s = t.stages[i];
    EXPECT_EQ(span.trace_id(), bytes(kTraceId));
    EXPECT_EQ(span.span_id(), bytes(core::derive_span_id(kTraceId, s.start_ns, s.tid)));
    EXPECT_NE(span.span_id(), parent);
    EXPECT_EQ(span.parent_span_id(), parent);
    EXPECT_EQ(span.kind(), pb::trace::v1::Span::SPAN_KIND_INTERNAL);
    EXPECT_EQ(span.name(), names[i]);
    EXPECT_EQ(span.start_time_unix_nano(), uint64_t(kOffset) + s.start_ns);
    EXPECT_EQ(span.end_time_unix_nano(), uint64_t(kOffset) + s.end_ns);
    auto a = attrs(span.attributes());
    if (ops[i]) {
      EXPECT_EQ(std::get<std::string>(a["gen_ai.operation.name"]), ops[i]);
    } else {
      EXPECT_EQ(a.count("gen_ai.operation.name"), 0u);
    }
    EXPECT_EQ(std::get<std::string>(a["tailcause.stage"]), s.stage);
    EXPECT_EQ(std::get<std::string>(a["tailcause.tenant"]), "acme");
    EXPECT_EQ(std::get<int64_t>(a["tailcause.tid"]), s.tid);
    EXPECT_EQ(std::get<int64_t>(a["tailcause.pid"]), 4242);
    EXPECT_EQ(std::get<int64_t>(a["tailcause.request_id"]), 7);
  }
  // All span ids in the trace differ.
  std::set<std::string> ids;
  for (const auto& span : spans) ids.insert(span.span_id());
  EXPECT_EQ(ids.size(), 6u);
}

TEST(OtlpEncode, StageBreakdownCountersAndVerdict) {
  const auto req = decode({sample_trace()});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  auto emb = attrs(spans[1].attributes());
  EXPECT_DOUBLE_EQ(std::get<double>(emb["tailcause.component.on_cpu"]), 0.05);
  EXPECT_DOUBLE_EQ(std::get<double>(emb["tailcause.component.block_io"]), 0.03);
  EXPECT_DOUBLE_EQ(std::get<double>(emb["tailcause.component.unattributed"]), 0.02);
  EXPECT_EQ(emb.count("tailcause.component.network"), 0u);  // only components with time
  EXPECT_EQ(std::get<int64_t>(emb["tailcause.page_cache_misses"]), 1240);
  EXPECT_EQ(std::get<int64_t>(emb["tailcause.major_faults"]), 3);
  EXPECT_EQ(std::get<int64_t>(emb["tailcause.bytes_read"]), 1 << 20);
  EXPECT_FALSE(std::get<bool>(emb["tailcause.glitch"]));
  EXPECT_EQ(emb.count("tailcause.verdict"), 0u);
  EXPECT_EQ(spans[1].status().code(), pb::trace::v1::Status::STATUS_CODE_UNSET);

  auto chat = attrs(spans[3].attributes());
  EXPECT_DOUBLE_EQ(std::get<double>(chat["tailcause.component.cpu_throttled"]), 0.4);
  EXPECT_TRUE(std::get<bool>(chat["tailcause.glitch"]));
  EXPECT_EQ(std::get<std::string>(chat["tailcause.glitch.cause"]), "cpu_throttled");
  EXPECT_EQ(std::get<std::string>(chat["tailcause.glitch.reason"]), "over_slo");
  EXPECT_DOUBLE_EQ(std::get<double>(chat["tailcause.glitch.slo_seconds"]), 0.2);
  EXPECT_EQ(chat.count("tailcause.glitch.p99_seconds"), 0u);
  const std::string evidence = "generation 600 ms, 67% cpu_throttled: 12 throttled periods";
  EXPECT_EQ(std::get<std::string>(chat["tailcause.verdict"]), evidence);
  EXPECT_EQ(spans[3].status().code(), pb::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(spans[3].status().message(), evidence);
}

// Every component (core/record/schema.h) reaches the span under its own attribute, named after it.
TEST(OtlpEncode, AStageLinksToTheSpanOfTheThreadItWaitedOn) {
  core::RequestTrace t = sample_trace();
  // Retrieval (tid 4243) waited 80 ms on a helper (tid 4250) that ran a worker span; generation
  // waited on a lock holder outside the request.
  auto helper = stage("retrieval", 1210 * ms, 1290 * ms, 4250);
  helper.flags = 1;  // ATTRIB_SPAN_WORKER
  t.stages[1].waker = core::Waker{4250, 80 * ms, Component::cpu_throttled, true, false};
  t.stages[2].waker = core::Waker{777, 300 * ms, Component::block_io, false, false};
  t.stages.insert(t.stages.begin() + 2, helper);
  const auto req = decode({t});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  auto span_of = [&](const std::string& name, uint32_t tid) -> const pb::trace::v1::Span& {
    for (const auto& s : spans) {
      auto a = attrs(s.attributes());
      if (s.name() == name && a.count("tailcause.tid") &&
          std::get<int64_t>(a["tailcause.tid"]) == tid)
        return s;
    }
    ADD_FAILURE() << "no span " << name << " of tid " << tid;
    return spans[0];
  };
  const auto& retrieval = span_of("retrieval", 4243);
  ASSERT_EQ(retrieval.links_size(), 1);
  EXPECT_EQ(retrieval.links(0).trace_id(), bytes(kTraceId));
  EXPECT_EQ(retrieval.links(0).span_id(), span_of("retrieval", 4250).span_id());
  auto la = attrs(retrieval.links(0).attributes());
  EXPECT_EQ(std::get<std::string>(la["tailcause.waited_on.edge"]), "lock_holder");
  EXPECT_DOUBLE_EQ(std::get<double>(la["tailcause.waited_on.seconds"]), 0.08);
  auto ra = attrs(retrieval.attributes());
  EXPECT_EQ(std::get<int64_t>(ra["tailcause.waited_on.tid"]), 4250);
  EXPECT_EQ(std::get<std::string>(ra["tailcause.waited_on.component"]), "cpu_throttled");

  const auto& generation = span_of("chat", 4244);
  EXPECT_EQ(generation.links_size(), 0);  // its waker ran no span of this request
  auto ga = attrs(generation.attributes());
  EXPECT_EQ(std::get<int64_t>(ga["tailcause.waited_on.tid"]), 777);
  EXPECT_EQ(std::get<std::string>(ga["tailcause.waited_on.edge"]), "waker");
  EXPECT_EQ(std::get<std::string>(ga["tailcause.waited_on.component"]), "block_io");
  // A stage resolved through no other thread has neither.
  EXPECT_EQ(attrs(span_of("execute_tool", 4243).attributes()).count("tailcause.waited_on.tid"), 0u);
}

TEST(OtlpEncode, EveryComponentHasItsOwnAttribute) {
  auto t = sample_trace();
  auto s = stage("generation", 1300 * ms, 1900 * ms, 4244);
  for (Component c : core::kAllComponents)
    s.component_ns[core::index_of(c)] = (core::index_of(c) + 1) * ms;
  t.stages = {s};
  t.glitches.clear();
  const auto req = decode({t});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 2);
  auto a = attrs(spans[1].attributes());
  std::set<std::string> keys;
  for (Component c : core::kAllComponents) {
    const std::string key = component_attribute(c);
    SCOPED_TRACE(key);
    EXPECT_EQ(key, std::string("tailcause.component.") + core::component_name(c));
    EXPECT_TRUE(keys.insert(key).second);
    ASSERT_EQ(a.count(key), 1u);
    EXPECT_DOUBLE_EQ(std::get<double>(a[key]), static_cast<double>(core::index_of(c) + 1) * 1e-3);
  }
  size_t component_attrs = 0;
  for (const auto& [k, v] : a) component_attrs += k.rfind("tailcause.component.", 0) == 0;
  EXPECT_EQ(component_attrs, core::kComponents);
}

TEST(OtlpEncode, FailedRequestWithoutGlitchAndNoTokens) {
  auto t = sample_trace();
  t.glitches.clear();
  t.request.status = 2;
  t.request.tokens = 0;
  t.request.first_token_ns = t.request.last_token_ns = 0;
  const auto req = decode({t});
  const auto& span = req.resource_spans(0).scope_spans(0).spans(0);
  auto a = attrs(span.attributes());
  EXPECT_EQ(a.count("gen_ai.usage.output_tokens"), 0u);
  EXPECT_EQ(a.count("tailcause.time_to_first_token"), 0u);
  EXPECT_FALSE(std::get<bool>(a["tailcause.glitch"]));
  EXPECT_EQ(std::get<int64_t>(a["tailcause.status"]), 2);
  EXPECT_EQ(span.status().code(), pb::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(span.status().message(), "request status 2");
  EXPECT_EQ(span.events_size(), 0);
}

TEST(OtlpEncode, FailedRequestCarriesErrorType) {
  auto t = sample_trace();
  t.request.status = 503;
  auto ok = sample_trace();
  ok.trace_id = core::derive_trace_id(1, 2, 3);
  const auto req = decode({t, ok});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  EXPECT_EQ(std::get<std::string>(attrs(spans[0].attributes())["error.type"]), "503");
  EXPECT_EQ(attrs(spans[6].attributes()).count("error.type"), 0u);  // status 0: no error
}

// The agent passed a traceparent: the request span is a child of the agent's span (INTERNAL),
// in the agent's trace; its stages stay children of the request span.
TEST(OtlpEncode, RequestSpanIsAChildOfTheAgentsTraceparent) {
  auto t = sample_trace();
  t.request.id.parent_span_id = "00f067aa0ba902b7";
  const auto req = decode({t});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  EXPECT_EQ(spans[0].trace_id(), bytes(kTraceId));
  EXPECT_EQ(spans[0].parent_span_id(), bytes("00f067aa0ba902b7"));
  EXPECT_EQ(spans[0].kind(), pb::trace::v1::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(spans[1].parent_span_id(), spans[0].span_id());
  EXPECT_EQ(spans[1].kind(), pb::trace::v1::Span::SPAN_KIND_INTERNAL);

  // A parent on a trace id the daemon derived (not the agent's) is never used.
  t.trace_id_from_agent = false;
  const auto derived = decode({t});
  EXPECT_TRUE(derived.resource_spans(0).scope_spans(0).spans(0).parent_span_id().empty());
  EXPECT_EQ(derived.resource_spans(0).scope_spans(0).spans(0).kind(),
            pb::trace::v1::Span::SPAN_KIND_SERVER);
}

TEST(OtlpEncode, GenerationModelAndProvider) {
  auto t = sample_trace();
  t.stages[2].kind = core::stage_kind_value(core::StageKind::generation);
  t.stages[2].detail = "ollama:llama3:8b";
  const auto req = decode({t});
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  auto chat = attrs(spans[3].attributes());
  EXPECT_EQ(spans[3].name(), "chat llama3:8b");
  EXPECT_EQ(std::get<std::string>(chat["gen_ai.request.model"]), "llama3:8b");
  EXPECT_EQ(std::get<std::string>(chat["gen_ai.provider.name"]), "ollama");
  auto request = attrs(spans[0].attributes());
  EXPECT_EQ(std::get<std::string>(request["gen_ai.request.model"]), "llama3:8b");
  // Other stages name no model.
  EXPECT_EQ(attrs(spans[1].attributes()).count("gen_ai.request.model"), 0u);

  EXPECT_EQ(split_model("gpt-4o").model, "gpt-4o");
  EXPECT_EQ(split_model("gpt-4o").provider, "");
  EXPECT_EQ(split_model("openai:gpt-4o").provider, "openai");
  EXPECT_EQ(split_model(":x").model, ":x");  // no provider before the ':'
  EXPECT_EQ(split_model("x:").model, "x:");
}

TEST(OtlpEncode, ResourceAttributes) {
  OtlpResourceInfo res{
      "svc", "1.0", "node-1", {{"deployment.environment", "prod"}, {"service.name", "ignored"}}};
  pb::collector::trace::v1::ExportTraceServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(encode_traces(std::vector{sample_trace()}, res)));
  auto ra = attrs(req.resource_spans(0).resource().attributes());
  EXPECT_EQ(std::get<std::string>(ra["deployment.environment"]), "prod");
  EXPECT_EQ(std::get<std::string>(ra["service.name"]), "svc");
}

TEST(OtlpEncode, SeveralTracesAndABadTraceId) {
  auto a = sample_trace();
  auto b = sample_trace();
  b.trace_id = core::derive_trace_id(1, 2, 3);
  b.stages.resize(1);
  auto bad = sample_trace();
  bad.trace_id = "not-hex";
  size_t skipped = 0;
  const auto req = decode({a, bad, b}, &skipped);
  EXPECT_EQ(skipped, 1u);
  const auto& spans = req.resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 6 + 2);
  EXPECT_EQ(spans[6].trace_id(), bytes(b.trace_id));
  EXPECT_EQ(spans[7].parent_span_id(), bytes(core::derive_span_id(b.trace_id, 0, 0)));
  EXPECT_EQ(spans[7].parent_span_id(), spans[6].span_id());
}

TEST(OtlpEncode, Names) {
  EXPECT_EQ(stage_span_name("embedding"), "embeddings");
  EXPECT_EQ(stage_span_name("generation"), "chat");
  EXPECT_EQ(stage_span_name("tool"), "execute_tool");
  EXPECT_EQ(stage_span_name("prompt"), "prompt");
  EXPECT_FALSE(gen_ai_operation("retrieval"));
  EXPECT_EQ(hex_to_bytes("00ff7A"), std::string("\x00\xff\x7a", 3));
  EXPECT_FALSE(hex_to_bytes("abc"));
  EXPECT_FALSE(hex_to_bytes("zz"));
}

}  // namespace
}  // namespace tailcause::exporter
