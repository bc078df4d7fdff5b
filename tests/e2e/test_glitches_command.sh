#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tailcause glitches` lists and explains the journal's glitches: bad queries get a clear
# message and exit 2, a missing journal exits 1 (and is not created); with a journal written by
# a real daemon run (the example agent under a 20 ms stage SLO, so its stages glitch), the JSON
# rows carry every field, match what the agent did, and --tenant, --stage, --since and --limit
# filter them. The journal is read while the daemon still writes it (SQLite WAL). --show prints
# one glitched request's propagation tree (who waited on whom: here a lock holder).
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
JOURNAL="$WORK/journal.db"

# expect_glitches_exit CODE PATTERN ARGS...: `tailcause glitches ARGS` exits CODE saying PATTERN on
# stderr and prints nothing on stdout.
expect_glitches_exit() {
  local want=$1 pattern=$2
  shift 2
  expect_exit "$want" "$pattern" "$TAILCAUSE" glitches "$@"
  [ ! -s "$WORK/out.txt" ] || fail "glitches $*: printed to stdout: $(head -3 "$WORK/out.txt")"
  pass "glitches $*: exit $EXIT_RC, '$(head -1 "$WORK/err.txt")'"
}

expect_glitches_exit 1 "no journal at $WORK/none.db" --journal "$WORK/none.db"
[ ! -e "$WORK/none.db" ] || fail "a missing journal was created"
printf 'journal:\n  path: %s/other.db\n' "$WORK" >"$WORK/other.yaml"
expect_glitches_exit 1 "no journal at $WORK/other.db" --config "$WORK/other.yaml"
[ ! -e "$WORK/other.db" ] || fail "a missing journal (from --config) was created"
expect_glitches_exit 2 "invalid duration '5x': unknown unit 'x'" --journal "$JOURNAL" --since 5x
expect_glitches_exit 2 "invalid duration '-1h': must not be negative" --journal "$JOURNAL" --since -1h
expect_glitches_exit 2 "invalid duration '': empty" --journal "$JOURNAL" --since ''
expect_glitches_exit 2 "limit must be in 1\.\.100000, got 0" --journal "$JOURNAL" --limit 0
expect_glitches_exit 2 "limit" --journal "$JOURNAL" --limit lots
expect_glitches_exit 2 "empty tenant name" --journal "$JOURNAL" --tenant ''
expect_glitches_exit 2 "empty stage name" --journal "$JOURNAL" --stage ''
expect_glitches_exit 2 "'xyz' is not a trace id" --journal "$JOURNAL" --show xyz
expect_glitches_exit 2 "'4bf92f3' is not a trace id" --journal "$JOURNAL" --show 4bf92f3
expect_glitches_exit 2 "excludes" --journal "$JOURNAL" --show 4bf92f35 --incidents
expect_glitches_exit 2 "excludes" --journal "$JOURNAL" --show 4bf92f35 --tenant ta
echo "not a database, just text" >"$WORK/garbage.db"
expect_glitches_exit 1 "garbage.db" --journal "$WORK/garbage.db"

cat >"$WORK/daemon.yaml" <<YAML
glitch:
  stage_slo_ms: 20        # the agent's generation takes ~50 ms: it glitches
probes:
  attrib:
    binary: $AGENT        # this agent only, whatever else runs on the host
breaker:
  socket: $WORK/breaker.sock
  state_file: $WORK/breaker.state
journal:
  path: $JOURNAL
YAML
start_daemon --config "$WORK/daemon.yaml"
"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration 6 --fault slow-peer:tb --fault lock:ta \
  >"$WORK/agent.log" 2>&1 || fail "agent: $(tail -5 "$WORK/agent.log")"

# The daemon writes the journal about once a second: read it while it runs.
journaled() {  # whether glitches --json lists a glitch (in $WORK/all.json)
  "$TAILCAUSE" glitches --journal "$JOURNAL" --json --limit 100000 >"$WORK/all.json" 2>"$WORK/err.txt" || true
  /usr/bin/python3 -c 'import json,sys; sys.exit(0 if len(json.load(open(sys.argv[1]))) > 0 else 1)' \
    "$WORK/all.json" 2>/dev/null
}
wait_until 15 "a journaled glitch" journaled || true
[ -s "$WORK/all.json" ] || fail "glitches --json printed nothing: $(cat "$WORK/err.txt")"
sleep 1.5  # the last batch, and nothing newer than 1 s from here on
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --limit 100000 >"$WORK/all.json"
"$TAILCAUSE" --log-level warn glitches --journal "$JOURNAL" --json --tenant ta >"$WORK/ta.json"
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --tenant tb --stage tool >"$WORK/tb_tool.json"
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --stage generation --limit 100000 >"$WORK/gen.json"
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --since 1h --limit 100000 >"$WORK/hour.json"
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --limit 3 >"$WORK/three.json"
"$TAILCAUSE" glitches --config "$WORK/daemon.yaml" --json --tenant nobody >"$WORK/nobody.json"
"$TAILCAUSE" glitches --journal "$JOURNAL" --tenant tb --stage tool --limit 5 >"$WORK/table.txt"
"$TAILCAUSE" glitches --journal "$JOURNAL" --tenant nobody >"$WORK/empty.txt"
sleep 1.2
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --since 1s >"$WORK/second.json"
stop_daemon

# The propagation view: ta's generation waited on the lock its model's compaction thread held
# (the lock fault), a thread that runs no span of the request.
trace=$(/usr/bin/python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
lock = [r["trace_id"] for r in rows if r["tenant"] == "ta" and r["stage"] == "generation"
        and r["cause"] == "lock" and r["trace_id"]]
print(lock[0] if lock else "")' "$WORK/all.json")
[ -n "$trace" ] || fail "no lock-bound generation glitch of ta under the lock fault"
"$TAILCAUSE" glitches --journal "$JOURNAL" --show "${trace:0:12}" >"$WORK/show.txt" 2>"$WORK/err.txt" ||
  fail "glitches --show ${trace:0:12}: $(cat "$WORK/err.txt")"
"$TAILCAUSE" glitches --journal "$JOURNAL" --show "${trace^^}" --json >"$WORK/show.json" ||
  fail "glitches --show (upper case) --json"
grep -q "trace $trace" "$WORK/show.txt" || fail "--show: $(head -3 "$WORK/show.txt")"
grep -qE '^├─ generation  tid [0-9]+ .*GLITCH' "$WORK/show.txt" || fail "--show: $(cat "$WORK/show.txt")"
grep -qE '^│  └─ waited [0-9.]+ [mu]?s on the lock holder, which was in [a-z_]+: tid [0-9]+ ran no span of this request' \
  "$WORK/show.txt" || fail "--show names no lock holder: $(cat "$WORK/show.txt")"
grep -q "in this request, newest first" "$WORK/show.txt" || fail "--show lists no glitch rows"
/usr/bin/python3 - "$WORK/show.json" "$trace" <<'PY' || fail "--show --json: $(head -c 600 "$WORK/show.json")"
import json, sys
doc, trace = json.load(open(sys.argv[1])), sys.argv[2]
assert doc["trace_id"] == trace, doc["trace_id"]
tree = doc["tree"]
assert tree["tenant"] == "ta", tree["tenant"]
stages = [n for n in tree["stages"] if n["edge"] == "stage"]
assert [n["stage"] for n in stages][:4] == ["prompt", "embedding", "retrieval", "generation"], stages
gen = next(n for n in stages if n["stage"] == "generation")
holders = [c for c in gen["children"] if c["edge"] == "lock_holder"]
assert holders and holders[0]["wait_ns"] > 0 and "stage" not in holders[0], gen["children"]
assert gen["tid"] != holders[0]["tid"]
assert doc["glitches"] and all(r["trace_id"] == trace for r in doc["glitches"]), doc["glitches"]
PY
expect_glitches_exit 1 "no propagation tree for trace 0000000000000000" --journal "$JOURNAL" \
  --show 0000000000000000
pass "--show: $(grep -m1 "waited" "$WORK/show.txt" | tr -s ' ' | cut -c1-160)"

/usr/bin/python3 - "$WORK" <<'PY' || fail "journal rows do not match"
import json, sys
w = sys.argv[1]
load = lambda name: json.load(open(f"{w}/{name}.json"))
rows = load("all")
fields = {"id", "batch", "time_ns", "time", "tenant", "agent", "stage", "wall_seconds", "components",
          "page_cache_misses", "cause", "verdict", "evidence", "trace_id"}
components = {"on_cpu", "runqueue", "cpu_throttled", "block_io", "network", "lock", "gpu", "sleep",
              "unattributed"}
stages = {"prompt", "embedding", "retrieval", "generation", "tool", "response", "request"}
assert rows, "no rows"
for r in rows:
    assert set(r) == fields, sorted(set(r) ^ fields)
    assert set(r["components"]) == components, r["components"]
    assert r["tenant"] in ("ta", "tb"), r
    assert r["agent"] == "rag-agent", r
    assert r["stage"] in stages or r["stage"].startswith("cache:"), r
    assert r["cause"], r
    if r["stage"] in stages - {"request"}:
        # A stage glitch (over the 20 ms SLO): its cause is one of its components, which
        # together cover its wall time, and the evidence line starts with the stage.
        assert r["cause"] in components or r["cause"] == "slow", r
        if r["verdict"].startswith(("over_slo", "both")):
            assert r["wall_seconds"] >= 0.02, r
        assert sum(r["components"].values()) >= 0.5 * r["wall_seconds"], r
        assert r["evidence"].startswith(r["stage"] + " "), r
    assert len(r["trace_id"]) in (0, 32), r
times = [r["time_ns"] for r in rows]
assert times == sorted(times, reverse=True), "not newest first"
tenants = {r["tenant"] for r in rows}
assert tenants == {"ta", "tb"}, tenants
# tb's tool calls waited 300 ms on the slow peer: those glitches are network-bound.
tb_tool = load("tb_tool")
assert tb_tool and all(r["tenant"] == "tb" and r["stage"] == "tool" for r in tb_tool), tb_tool[:2]
assert sum(r["cause"] == "network" for r in tb_tool) >= 0.8 * len(tb_tool), [r["evidence"] for r in tb_tool]
assert all(r["wall_seconds"] >= 0.25 for r in tb_tool if r["cause"] == "network"), tb_tool
ta = load("ta")
assert ta and all(r["tenant"] == "ta" for r in ta), "--tenant ta"
assert len(ta) <= 100, "default limit"
gen = load("gen")
assert gen and all(r["stage"] == "generation" for r in gen), "--stage generation"
assert {r["id"] for r in gen} == {r["id"] for r in rows if r["stage"] == "generation"}, "--stage lost rows"
assert load("hour") == rows, "--since 1h"
assert load("three") == rows[:3], "--limit 3"
assert load("nobody") == [], "--tenant nobody"
assert load("second") == [], "--since 1s after the agent stopped"
print(f"ok: {len(rows)} rows; ta {len(ta)}, tb tool {len(tb_tool)}, generation {len(gen)}")
PY
pass "journal rows carry every field and match the agent's glitches; --tenant, --stage, --since, --limit filter"

grep -q "newest first" "$WORK/table.txt" || fail "table: $(head -3 "$WORK/table.txt")"
grep -qE '^    tool [0-9.]+ ms, [0-9]+% network' "$WORK/table.txt" || fail "table lacks evidence lines: $(cat "$WORK/table.txt")"
[ "$(cat "$WORK/empty.txt")" = "no glitches for tenant nobody" ] || fail "empty: $(cat "$WORK/empty.txt")"
pass "table explains each glitch: $(sed -n 3,4p "$WORK/table.txt" | tr -s ' ' | tr '\n' '|')"
