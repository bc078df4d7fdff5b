#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# OTLP on the wire: otlp_send (OtlpExporter: encode, batch, POST, retry) sends two known traces
# to tests/e2e/otlp_receiver/receiver.js, which decodes them with the OpenTelemetry project's own
# OTLP definitions (npm @opentelemetry/otlp-transformer's generated protobufjs root), not ours.
# Checks ids, parent links (the request span of a trace given a W3C traceparent is a child of
# the agent's span), kinds, times, GenAI and tailcause attributes (model, provider,
# error.type), status, the resource and its attributes, the headers, gzip bodies, and a retry
# after the receiver's first 503. No root needed. Skips (77) only when
# node/npm are missing outside CI.
source "$(dirname "$0")/lib.sh"

SEND="$BUILD_DIR/testprogs/otlp_send"
[ -x "$SEND" ] || fail "$SEND not built"
start_otlp_receiver --fail-first 1 --fail-status 503 --retry-after 0
pass "receiver packages installed ($(node -p "require('$SRC_DIR/tests/e2e/otlp_receiver/node_modules/@opentelemetry/otlp-transformer/package.json').version") otlp-transformer, node $(node --version))"

"$SEND" "http://127.0.0.1:$RPORT/v1/traces" >"$WORK/expected.json" 2>"$WORK/send.log" ||
  { cat "$WORK/send.log" >&2; fail "otlp_send did not export every span"; }
pass "otlp_send exported $(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["spans"]))' "$WORK/expected.json") spans"

/usr/bin/python3 - "$WORK/expected.json" "$WORK/spans.jsonl" "$WORK/requests.jsonl" <<'PY'
import json, math, sys

expected = json.load(open(sys.argv[1]))
got = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
posts = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(b, (int, float)) and not isinstance(b, bool) and math.isclose(a, b, rel_tol=1e-9)
    return a == b and type(a) == type(b)

# The retry: the first POST was refused with 503, the same spans came again and were accepted.
check(len(posts) >= 2 and posts[0]["status"] == 503 and posts[1]["status"] == 200, f"POST statuses: {[p['status'] for p in posts]}")
check(posts and posts[0].get("spans") == posts[-1].get("spans"), "the retried POST carried other spans")
for p in posts:
    check(p["content_type"] == "application/x-protobuf", f"content type {p['content_type']!r}")
    check(p.get("content_encoding") == "gzip" and p.get("inflated_bytes", 0) > p["bytes"],
          f"body not gzip: encoding {p.get('content_encoding')!r}, {p['bytes']} -> {p.get('inflated_bytes')} bytes")
    check(p["headers"].get("x-tailcause-test") == "otlp-send", "the configured header is missing")
    check(p["path"] == "/v1/traces", f"path {p['path']!r}")

want = expected["spans"]
by_id = {}
for s in got:
    check(s["span_id"] not in by_id, f"span {s['span_id']} received twice")
    by_id[s["span_id"]] = s
check(len(got) == len(want), f"received {len(got)} spans, sent {len(want)}")

for w in want:
    s = by_id.get(w["span_id"])
    if s is None:
        errors.append(f"span {w['name']} {w['span_id']} not received")
        continue
    for k in ("trace_id", "parent_span_id", "name", "kind", "start_time_unix_nano", "end_time_unix_nano"):
        check(s[k] == w[k], f"{w['name']}: {k} {s[k]!r} != {w[k]!r}")
    check(s["status"]["code"] == w["status_code"], f"{w['name']}: status {s['status']}")
    if "status_message" in w:
        check(s["status"]["message"] == w["status_message"], f"{w['name']}: status message {s['status']['message']!r}")
    for k, v in w["attributes"].items():
        check(k in s["attributes"] and same(v, s["attributes"][k]),
              f"{w['name']}: attribute {k} = {s['attributes'].get(k)!r}, want {v!r}")
    check(s["resource"].get("service.name") == expected["service_name"], f"resource {s['resource']}")
    check(s["resource"].get("deployment.environment") == "e2e", f"resource attributes {s['resource']}")
    check(bool(s["resource"].get("host.name")), "resource lacks host.name")
    check(s["scope"]["name"] == "tailcause", f"scope {s['scope']}")

# Structure, independent of what otlp_send printed: one request span per trace -- a SERVER root,
# or, where the agent passed its traceparent, an INTERNAL child of the agent's span in the
# agent's trace --, every stage a child of it, the GenAI names and the glitch's breakdown as the
# spec'd attributes say.
roots = {s["trace_id"]: s for s in got if s["name"].startswith("invoke_agent ")}
check(len(roots) == 2, f"{len(roots)} request spans")
linked = roots.get("4bf92f3577b34da6a3ce929d0e0e4736")
check(linked is not None and linked["parent_span_id"] == "00f067aa0ba902b7" and linked["kind"] == "SPAN_KIND_INTERNAL",
      f"the traceparent's request span is not a child of 00f067aa0ba902b7: {linked and (linked['parent_span_id'], linked['kind'])}")
plain = [s for s in roots.values() if s is not linked]
check(len(plain) == 1 and plain[0]["parent_span_id"] == "" and plain[0]["kind"] == "SPAN_KIND_SERVER", "the other request is not a SERVER root")
check(plain and plain[0]["attributes"].get("error.type") == "2", "the failed request lacks error.type")
for s in got:
    check(len(s["trace_id"]) == 32 and len(s["span_id"]) == 16, f"id sizes {s['trace_id']} {s['span_id']}")
    if s["kind"] == "SPAN_KIND_INTERNAL" and s is not roots.get(s["trace_id"]):
        root = roots.get(s["trace_id"])
        check(root is not None and s["parent_span_id"] == root["span_id"], f"{s['name']}: parent is not its request")
agent = [s for s in got if s["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"]
check(sorted(s["name"] for s in agent) == sorted(["invoke_agent rag", "embeddings", "retrieval", "chat gpt-4o-mini", "execute_tool"]),
      f"names {sorted(s['name'] for s in agent)}")
ops = {s["name"]: s["attributes"].get("gen_ai.operation.name") for s in agent}
check(ops == {"invoke_agent rag": "invoke_agent", "embeddings": "embeddings", "retrieval": None, "chat gpt-4o-mini": "chat",
              "execute_tool": "execute_tool"}, f"gen_ai.operation.name {ops}")
chat = next((s for s in agent if s["name"] == "chat gpt-4o-mini"), None)
check(chat is not None, "no chat span")
if chat:
    check(chat["attributes"].get("gen_ai.request.model") == "gpt-4o-mini" and
          chat["attributes"].get("gen_ai.provider.name") == "openai", f"chat model {chat['attributes']}")
    check(chat["attributes"].get("tailcause.component.cpu_throttled") == 0.4, f"chat breakdown {chat['attributes']}")
    check(chat["status"]["code"] == "STATUS_CODE_ERROR" and "cpu_throttled" in chat["status"]["message"], f"chat status {chat['status']}")
    check(chat["attributes"].get("tailcause.glitch") is True, "chat is not marked as a glitch")

if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"ok: {len(got)} spans decoded by the OpenTelemetry definitions match (ids, parents, names, kinds, times, attributes, status)")
PY
pass "OTLP round trip"
