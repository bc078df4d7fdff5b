#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tailcause demo` and `tailcause diagnose`: the demo runs the example agent with two tenants
# and reports them (JSON shape, both tenants with QPS > 0, every stage, the agent and its
# cgroups gone afterwards); diagnose, while an agent runs, reports its tenants too; Ctrl-C ends
# either early and the report still comes; empty sections say "none seen"; bad flags exit 2.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
AGENT_PID=""
on_exit 'stop_pid AGENT_PID'
# gone REPORT: the demo's agent (pid in the report) has exited and its cgroups
# (tailcause-agent-<pid>, in whichever hierarchy) are removed.
gone() {
  local pid
  pid=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["demo"]["agent_pid"])' "$1")
  { [ -n "$pid" ] && [ "$pid" -gt 0 ]; } || fail "no agent pid in $1"
  ! kill -0 "$pid" 2>/dev/null || fail "the demo left its agent (pid $pid) running"
  local left
  left=$(find /sys/fs/cgroup /sys/fs/cgroup/cpu -maxdepth 1 -name "tailcause-agent-$pid" 2>/dev/null)
  [ -z "$left" ] || fail "the demo left its agent's cgroups: $left"
}

bad_flags() {  # bad_flags PATTERN ARGS...: `tailcause ARGS` exits 2 saying PATTERN
  local pattern=$1
  shift
  expect_exit 2 "$pattern" "$TAILCAUSE" "$@"
  pass "$*: exit 2"
}
bad_flags "invalid duration '5x'" diagnose --duration 5x
bad_flags "at least 1s" diagnose --duration 10ms
bad_flags "fault: bogus not in" demo --fault bogus
bad_flags "not an executable file" demo --agent "$WORK/no-agent"
bad_flags "between 1s and 1h" demo --duration 2h

check_report() {  # check_report FILE KIND: the JSON shape both commands share, tenants ta and tb
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kind = sys.argv[2]
for key in ("duration_seconds", "requests", "glitches", "breaker_trips", "headline", "tenants", "stages",
            "glitch_causes", "top_glitches", "caches", "throttled_cgroups", "noisy_neighbours",
            "slowest_tcp_peers", "interrupted" if kind == "diagnose" else "demo"):
    assert key in d, f"no {key}"
tenants = {t["tenant"]: t for t in d["tenants"]}
assert {"ta", "tb"} <= set(tenants), sorted(tenants)
for name in ("ta", "tb"):
    t = tenants[name]
    assert t["qps"] > 0 and t["requests"] > 0, t
    assert 0 <= t["cache_breakdown_rate"] <= 1 and t["cache_lookups"] > 0, t
    assert t["embedding_p99_seconds"] and t["embedding_p99_seconds"] > 0, t
    stages = {s["stage"]: s for s in d["stages"] if s["tenant"] == name}
    for stage in ("prompt", "embedding", "retrieval", "generation", "tool", "response"):
        s = stages.get(stage)
        assert s and s["count"] > 0 and 0 < s["p50_seconds"] <= s["p99_seconds"], (name, stage, s)
        assert s["leading_component"] in s["component_seconds"], s
# The agent's tool calls are loopback TCP connections.
assert any(p["remote"].startswith("127.0.0.1:") for p in d["slowest_tcp_peers"]), d["slowest_tcp_peers"][:3]
print(f"{kind}: {d['duration_seconds']:.1f} s, " +
      ", ".join(f"{n} {t['qps']:.1f} qps" for n, t in sorted(tenants.items())) + f"; {d['headline']}")
PY
}

"$TAILCAUSE" demo --fault none --duration 8s --json >"$WORK/demo.json" 2>"$WORK/demo.err" ||
  fail "demo exited $?: $(tail -5 "$WORK/demo.err")"
check_report "$WORK/demo.json" demo >"$WORK/demo.check" || fail "demo report: $(head -c 600 "$WORK/demo.json")"
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["demo"]
assert d["fault"] == "none" and d["fault_tenant"] is None and d["tenants"] == ["ta", "tb"], d
assert d["interrupted"] is False and d["agent_exit"] == "exited with status 0", d' "$WORK/demo.json" ||
  fail "demo block: $(grep -A8 '"demo"' "$WORK/demo.json")"
grep -q "demo ran" "$WORK/demo.err" || fail "no progress on stderr: $(tail -3 "$WORK/demo.err")"
pass "$(cat "$WORK/demo.check")"
gone "$WORK/demo.json"
pass "the agent and its cgroups are gone after the demo"

# diagnose while an agent runs (started first: its index files are ready within moments).
"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration 14 --fault slow-peer:tb >"$WORK/agent.log" 2>&1 &
# shellcheck disable=SC2034  # stop_pid reads it by name
AGENT_PID=$!
sleep 2
"$TAILCAUSE" diagnose --duration 5s --json --binary "$AGENT" >"$WORK/diagnose.json" 2>"$WORK/diagnose.err" ||
  fail "diagnose exited $?: $(tail -5 "$WORK/diagnose.err")"
check_report "$WORK/diagnose.json" diagnose >"$WORK/diagnose.check" || fail "diagnose report: $(head -c 600 "$WORK/diagnose.json")"
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is False and d["duration_seconds"] >= 5, d["duration_seconds"]
# tb waits 300 ms per tool call on the slow peer; ta does not.
p99 = {(s["tenant"], s["stage"]): s["p99_seconds"] for s in d["stages"]}
assert p99[("tb", "tool")] >= 0.25 and p99[("tb", "tool")] > 2 * p99[("ta", "tool")], p99' "$WORK/diagnose.json" ||
  fail "diagnose: $(grep -A3 '"tool"' "$WORK/diagnose.json" | head -20)"
pass "$(cat "$WORK/diagnose.check")"

# Text, stopped early with SIGINT: the report still comes.
"$TAILCAUSE" diagnose --duration 60s --binary "$AGENT" >"$WORK/diagnose.txt" 2>"$WORK/diagnose2.err" &
DIAG=$!
sleep 4
kill -INT "$DIAG"
wait "$DIAG" || fail "diagnose after SIGINT exited $?: $(tail -3 "$WORK/diagnose2.err")"
grep -q "stopped early" "$WORK/diagnose2.err" || fail "no 'stopped early': $(tail -3 "$WORK/diagnose2.err")"
sed -n 3p "$WORK/diagnose.txt" | grep -q "^tailcause diagnose: " || fail "text: $(head -5 "$WORK/diagnose.txt")"
[ "$(sed -n 5p "$WORK/diagnose.txt")" = "Tenants" ] || fail "the tenants table is not first: $(head -8 "$WORK/diagnose.txt")"
grep -qE "^  TENANT +QPS +CACHE BREAKDOWN +EMBEDDING P99" "$WORK/diagnose.txt" || fail "tenants header: $(head -9 "$WORK/diagnose.txt")"
grep -qE "^  tb +[0-9.]+ " "$WORK/diagnose.txt" || fail "no tb row: $(head -12 "$WORK/diagnose.txt")"
for section in Stages "Top glitches" "Throttled cgroups" "Noisy neighbours" "Slowest TCP peers"; do
  grep -q "^$section" "$WORK/diagnose.txt" || fail "no $section section"
done
pass "SIGINT after 4 s of 60: text report with every section"
stop_pid AGENT_PID

# Nothing to see: every section says so.
"$TAILCAUSE" diagnose --duration 1s --binary "$AGENT" >"$WORK/empty.txt" 2>"$WORK/empty.err" ||
  fail "diagnose (idle) exited $?: $(tail -3 "$WORK/empty.err")"
# (What else ran on the node in that second, a TCP peer or a throttled cgroup, may lead instead.)
head -1 "$WORK/empty.txt" | grep -qE "^(no glitches: 0 requests from 0 tenants|in [0-9]+ s without SDK requests)" || fail "idle headline: $(head -1 "$WORK/empty.txt")"
[ "$(grep -A1 '^Tenants$' "$WORK/empty.txt" | tail -1)" = "  none seen" ] || fail "idle tenants: $(cat "$WORK/empty.txt")"
[ "$(grep -A1 '^Top glitches$' "$WORK/empty.txt" | tail -1)" = "  none seen" ] || fail "idle glitches: $(cat "$WORK/empty.txt")"
pass "idle: 'none seen' sections"

# demo stopped early: the agent is stopped cleanly (its cgroups removed) and the report comes.
"$TAILCAUSE" demo --fault lock --duration 60s --json >"$WORK/demo2.json" 2>"$WORK/demo2.err" &
DEMO=$!
sleep 6
kill -INT "$DEMO"
wait "$DEMO" || fail "demo after SIGINT exited $?: $(tail -5 "$WORK/demo2.err")"
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["demo"]["interrupted"] is True and d["demo"]["fault"] == "lock", d["demo"]' "$WORK/demo2.json" ||
  fail "demo2: $(tail -c 400 "$WORK/demo2.json")"
gone "$WORK/demo2.json"
pass "demo stopped by SIGINT: report printed, agent and cgroups gone"
