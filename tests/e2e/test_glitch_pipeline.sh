#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The glitch path end to end, with the real daemon and the example agent under a CPU quota on
# tenant ta: glitches counted by cause, journaled with their verdicts and the cgroup's
# throttling evidence; request and stage spans exported over OTLP/HTTP and decoded by the
# OpenTelemetry project's own definitions (ids, parent links, GenAI names, verdict attributes,
# trace ids that match the metrics' exemplars); the circuit breaker open for ta (metric, SDK
# socket from Python) and kept over a restart; the socket owner-only and unharmed by garbage.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
export PYTHONPATH="$SRC_DIR/sdk/python" TAILCAUSE_SDK_LIB="$BUILD_DIR/sdk/libtailcause_sdk.so"
SOCK="$WORK/run/breaker.sock"

start_otlp_receiver
cat >"$WORK/cfg.yaml" <<EOF
probes: {attrib: {binary: $AGENT}}
breaker: {socket: $SOCK, state_file: $WORK/state/breaker.state, quiet_s: 300}
journal: {path: $WORK/journal.db}
otlp: {endpoint: "http://127.0.0.1:$RPORT/v1/traces", sample_normal: 1, budget_spans_per_s: 100000}
EOF
start_daemon -c "$WORK/cfg.yaml"

[ "$(stat -c '%a %u' "$SOCK")" = "600 0" ] || fail "breaker socket is $(stat -c '%a %u' "$SOCK"), want 600 owned by root"
pass "breaker socket is owner-only (0600)"

"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration 8 --fault quota:ta \
  >"$WORK/agent.log" 2>&1 || fail "agent: $(tail -5 "$WORK/agent.log")"
sleep 2  # the journal writes about once a second

ta=$(metric_value 'tailcause_glitches_total{tenant="ta",agent="rag-agent",stage="generation",cause="cpu_throttled"}')
tb=$(metric_value 'tailcause_glitches_total{tenant="tb",agent="rag-agent",stage="generation",cause="cpu_throttled"}')
{ [ -n "$ta" ] && [ "${ta%.*}" -gt 0 ]; } || fail "no cpu_throttled generation glitches for ta: $(scrape | grep glitches_total)"
[ -z "$tb" ] || fail "tb has cpu_throttled glitches ($tb) without a quota"
pass "quota on ta: $ta generation glitches caused by cpu_throttled, none for tb"

# The journal: the same glitches with their verdicts and the cgroup's cpu.stat as evidence.
/usr/bin/python3 - "$WORK/journal.db" <<'PY' || fail "journal check"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
rows = db.execute("SELECT evidence, trace_id, cpu_throttled_s, wall_s FROM glitches "
                  "WHERE tenant='ta' AND stage='generation' AND cause='cpu_throttled'").fetchall()
assert rows, "no journaled cpu_throttled glitches for ta"
ev = [r[0] for r in rows]
assert all("cpu_throttled" in e for e in ev), ev[:3]
assert any("throttled in" in e and "periods" in e for e in ev), ev[:3]
assert all(len(r[1]) == 32 for r in rows), "every glitch carries a trace id"
assert all(0 < r[2] <= r[3] for r in rows), "throttled seconds within the stage's wall time"
print(f"ok: {len(rows)} journaled, e.g. {ev[0]!r}")
PY

# OTLP: spans decoded with the OpenTelemetry definitions, joined to the exemplars.
scrape -H 'Accept: application/openmetrics-text; version=1.0.0' >"$WORK/om.txt"
wait_until 6 "a glitch's span" grep -qs '"tailcause.glitch":true' "$WORK/spans.jsonl" || true
/usr/bin/python3 - "$WORK/spans.jsonl" "$WORK/om.txt" <<'PY' || fail "OTLP spans"
import json, re, sys
spans = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by_id = {s["span_id"]: s for s in spans}
requests = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
assert requests, "no request spans"
assert all(s["parent_span_id"] == "" and s["kind"] == "SPAN_KIND_SERVER" for s in requests)
stages = [s for s in spans if s not in requests]
for s in stages:
    parent = by_id.get(s["parent_span_id"])
    assert parent in requests and parent["trace_id"] == s["trace_id"], s["name"]
ops = {s["attributes"].get("gen_ai.operation.name") for s in stages}
assert {"embeddings", "chat", "execute_tool"} <= ops, ops
bad = [s for s in stages if s["attributes"].get("tailcause.tenant") == "ta"
       and s["attributes"].get("gen_ai.operation.name") == "chat"
       and s["attributes"].get("tailcause.glitch") is True]
# Under other processes' CPU load a ta generation can glitch for runqueue alone (it fitted in
# its quota that period): ta's glitching chats include throttled ones; tb's never are throttled.
throttled = [s for s in bad if "cpu_throttled" in s["attributes"]["tailcause.verdict"]]
assert throttled, ("no throttled glitching chat span for ta", [s["attributes"]["tailcause.verdict"] for s in bad])
assert all(s["status"]["code"] == "STATUS_CODE_ERROR" for s in bad)
assert all(s["attributes"]["tailcause.component.cpu_throttled"] > 0 for s in throttled)
tb_throttled = [s for s in stages if s["attributes"].get("tailcause.tenant") == "tb"
                and "cpu_throttled" in s["attributes"].get("tailcause.verdict", "")]
assert not tb_throttled, ("tb throttled without a quota", tb_throttled[:2])
exemplars = set(re.findall(r'# \{trace_id="([0-9a-f]{32})"\}', open(sys.argv[2]).read()))
traces = {s["trace_id"] for s in spans}
assert exemplars & traces, "no exemplar trace id among the exported traces"
print(f"ok: {len(requests)} request and {len(stages)} stage spans; "
      f"{len(exemplars & traces)} exemplar trace ids joined")
PY

# The breaker: open for ta after consecutive slow generations, as the metric and the SDK say.
[ "$(metric_value 'tailcause_circuit_breaker_open{tenant="ta",agent="rag-agent"}')" = "1" ] ||
  fail "breaker for ta not open: $(scrape | grep circuit_breaker)"
[ "$(metric_value 'tailcause_circuit_breaker_open{tenant="tb",agent="rag-agent"}')" = "0" ] ||
  fail "breaker for tb: $(scrape | grep circuit_breaker)"
breaker() {
  TAILCAUSE_BREAKER_SOCKET="$SOCK" /usr/bin/python3 -c '
import sys, tailcause
state, retry = tailcause.breaker_state(sys.argv[1], "rag-agent")
print(state, 1 if retry > 0 else 0)' "$1"
}
[ "$(breaker ta)" = "open 1" ] || fail "SDK reads ta: $(breaker ta)"
[ "$(breaker tb)" = "closed 0" ] || fail "SDK reads tb: $(breaker tb)"
pass "breaker open for ta, closed for tb (metric and SDK socket)"

# The example agent sheds ta's load while ta's breaker is open, through the C SDK's client.
TAILCAUSE_BREAKER_SOCKET="$SOCK" "$AGENT" --tenants ta,tb --rate 10 --duration 3 --shed-when-open \
  --report "$WORK/shed.json" >"$WORK/agent2.log" 2>&1 || fail "agent (shedding): $(tail -5 "$WORK/agent2.log")"
/usr/bin/python3 - "$WORK/shed.json" <<'PY' || fail "load shedding: $(cat "$WORK/shed.json")"
import json, sys
t = json.load(open(sys.argv[1]))["tenants"]
assert t["ta"]["requests"]["shed"] > 0 and t["ta"]["breaker"]["open_seen"] > 0, t["ta"]
assert t["tb"]["requests"]["shed"] == 0 and t["tb"]["breaker"]["unreadable"] == 0, t["tb"]
print(f'ok: the agent shed {t["ta"]["requests"]["shed"]} of ta\'s {t["ta"]["requests"]["offered"]} requests, none of tb\'s')
PY

# Garbage on the socket: errors, then a good client is still answered.
/usr/bin/python3 - "$SOCK" <<'PY' || fail "garbage on the breaker socket"
import os, socket, sys
def talk(data, read=True):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sys.argv[1])
    out = b""
    try:
        s.sendall(data)
        while read:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        pass  # the daemon closes on clients that misbehave
    s.close()
    return out
assert talk(b"hello world\n\x00\xff\xfe\nstate onlyone\n").count(b"error") == 3
assert b"error too_long" in talk(b"x" * 600)  # the limit is 512 bytes a line
talk(b"y" * 100000)
talk(os.urandom(4096), read=False)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"ping\n")
assert s.recv(100) == b"ok pong\n"
PY
kill -0 "$DAEMON_PID" || fail "daemon died"
pass "garbage answered with errors; the socket still serves"

# A restart keeps the breaker (state file), before any new stage arrives.
stop_daemon
[ -s "$WORK/state/breaker.state" ] || fail "no breaker state file"
[ ! -e "$SOCK" ] || fail "socket left behind after a clean stop"
start_daemon -c "$WORK/cfg.yaml"
[ "$(metric_value 'tailcause_circuit_breaker_open{tenant="ta",agent="rag-agent"}')" = "1" ] ||
  fail "breaker not restored: $(scrape | grep circuit_breaker)"
[ "$(breaker ta)" = "open 1" ] || fail "SDK after restart: $(breaker ta)"
pass "breaker state survives a daemon restart"

# SIGHUP with a tighter SLO: the analyzer takes it at once, the breaker keeps its state.
[ -z "$(metric_value 'tailcause_glitches_total{tenant="tb",agent="rag-agent",stage="generation",cause="on_cpu"}')" ] ||
  fail "tb's generation glitched before the SLO change"
sed -i 's/^probes:/glitch: {stage_slo_ms: 5}\nprobes:/' "$WORK/cfg.yaml"
kill -HUP "$DAEMON_PID"
wait_until 5 "the reload" grep -q "configuration reloaded" "$WORK/daemon.log" || fail "no reload"
"$AGENT" --tenants tb --rate 6 --duration 3 >"$WORK/agent3.log" 2>&1 || fail "agent 3: $(tail -5 "$WORK/agent3.log")"
sleep 1
n=$(scrape | awk '/^tailcause_glitches_total\{tenant="tb",agent="rag-agent",stage="generation"/ { s += $2 } END { print s + 0 }')
[ "${n%.*}" -gt 0 ] || fail "no tb generation glitches under a 5 ms SLO after SIGHUP"
[ "$(metric_value 'tailcause_circuit_breaker_open{tenant="ta",agent="rag-agent"}')" = "1" ] ||
  fail "the breaker was lost on reload"
pass "SIGHUP: a 5 ms stage SLO applies at once ($n tb generation glitches); ta's breaker still open"
