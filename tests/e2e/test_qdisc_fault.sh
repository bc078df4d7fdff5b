#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fault applied from outside a running agent (issue 10): a rate-limited loopback. The example
# agent runs two tenants whose tool calls are loopback HTTP to its tool server; after a warm-up
# a tbf qdisc goes on lo for ~15 s (`tc qdisc add dev lo root tbf rate 64kbit burst 2kb`), then goes
# away. Both tenants share lo, so both are slowed: of the tool stages that started while the
# qdisc held and ran far slower than the clean median of the same run (5x), at least 95% must
# lead with network, and most of those verdicts must name "qdisc tbf ... on lo"; before the fault
# no verdict mentions a qdisc. Prints the top-1 share and the time from the fault's start to the
# first correct verdict. Every stage is journaled (1 ms stage SLO); /metrics is scraped only
# outside the fault window (scrapes go over lo too). The qdisc is removed on every exit: one left
# on lo would slow every other test. ~50 s.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
command -v tc >/dev/null || fail "no tc (iproute2)"
JOURNAL="$WORK/journal.db"
WARMUP=12 FAULT=15 AFTER=5
tc qdisc show dev lo | grep -q '^qdisc tbf' && fail "lo already has a tbf qdisc: $(tc qdisc show dev lo)"

cat >"$WORK/daemon.yaml" <<YAML
glitch:
  request_slo_ms: 60000   # requests are judged through their stages
  stage_slo_ms: 1         # every stage is journaled: its verdict is what the test reads
  p99_factor: 1000        # SLOs only
  min_samples: 1000000
cache_breakdown:
  min_lookups: 1000000    # off: no cache verdicts in this test
probes:
  attrib:
    binary: $AGENT
breaker:
  socket: $WORK/breaker.sock
  state_file: $WORK/breaker.state
journal:
  path: $JOURNAL
YAML
start_daemon --config "$WORK/daemon.yaml"
wait_for_series '^tailcause_probe_attached\{probe="tcp"\} 1'

QDISC_ON=""
remove_qdisc() { [ -z "$QDISC_ON" ] || tc qdisc del dev lo root 2>/dev/null || true; QDISC_ON=""; }
on_exit remove_qdisc
AGENT_PID=""
on_exit 'stop_pid AGENT_PID'

"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration $((WARMUP + FAULT + AFTER)) \
  >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
sleep "$WARMUP"
# The clean tool stages (well under a millisecond, so under any SLO the journal could take):
# from the daemon's histogram, scraped before the fault.
scrape >"$WORK/clean.txt"
fault_start=$(date +%s%N)
# 64 kbit/s: below what the two tenants' tool calls send (~85 kbit/s), so the queue grows and
# each call waits ~0.3 s; 256 kbit/s would never be over its limit.
tc qdisc add dev lo root tbf rate 64kbit burst 2kb latency 500ms || fail "tc qdisc add"
QDISC_ON=1
sleep "$FAULT"
fault_end=$(date +%s%N)
tc qdisc show dev lo >"$WORK/qdisc.txt"
remove_qdisc
tc qdisc show dev lo | grep -q '^qdisc tbf' && fail "tbf still on lo"
wait "$AGENT_PID" || fail "agent exited $?: $(tail -5 "$WORK/agent.log")"
AGENT_PID=""
sleep 2  # the journal's last batch
scrape >"$WORK/metrics.txt"
"$TAILCAUSE" glitches --journal "$JOURNAL" --json --limit 100000 >"$WORK/rows.json"
stop_daemon

grep -E '^tailcause_qdisc_overlimits_total\{device="lo",qdisc="tbf [0-9a-f]+:"\} [1-9]' \
  "$WORK/metrics.txt" >/dev/null || fail "no qdisc overlimits series for lo: $(grep qdisc "$WORK/metrics.txt")"
pass "metrics: $(grep -E '^tailcause_qdisc_(overlimits|drops)_total' "$WORK/metrics.txt" | tr '\n' ' ')"

result=$(/usr/bin/python3 - "$WORK/rows.json" "$fault_start" "$fault_end" "$WORK/clean.txt" 2>&1 <<'PY'
import json, re, statistics, sys
rows = json.load(open(sys.argv[1]))
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
# The clean median: the upper bound of the bucket holding the 50th percentile of both tenants'
# tool stages before the fault.
buckets = {}
for line in open(sys.argv[4]):
    m = re.match(r'tailcause_stage_duration_seconds_bucket\{(.*)\} (\S+)', line)
    if m and 'stage="tool"' in m[1] and re.search(r'tenant="t[ab]"', m[1]):
        le = float(re.search(r'le="([^"]+)"', m[1])[1])
        buckets[le] = buckets.get(le, 0) + float(m[2])
total = buckets.get(float("inf"), 0)
assert total >= 20, f"{total:.0f} clean tool stages before the fault"
clean = min(le for le, n in buckets.items() if n >= total / 2)
tool = [r for r in rows if r["stage"] == "tool"]
for r in tool:
    r["start_ns"] = r["time_ns"] - int(r["wall_seconds"] * 1e9)
mentions = [r["evidence"] for r in rows if r["time_ns"] < t0 and "qdisc" in r["evidence"]]
assert not mentions, f"verdicts before the fault name a qdisc: {mentions[:3]}"
during = [r for r in tool if t0 <= r["start_ns"] < t1]
slowed = [r for r in during if r["wall_seconds"] > 5 * clean]
slow_med = statistics.median(r["wall_seconds"] for r in during) if during else 0
out = []
for tenant in ("ta", "tb"):
    mine = [r for r in slowed if r["tenant"] == tenant]
    assert len(mine) >= 5, f"{tenant}: {len(mine)} slowed tool stages of {sum(r['tenant'] == tenant for r in during)}"
    net = [r for r in mine if r["cause"] == "network"]
    share = len(net) / len(mine)
    named = [r for r in net if "qdisc tbf " in r["evidence"] and " on lo " in r["evidence"]]
    wrong = [(r["cause"], r["evidence"]) for r in mine if r["cause"] != "network"]
    assert share >= 0.95, f"{tenant}: network leads {len(net)} of {len(mine)}: {wrong[:3]}"
    assert 2 * len(named) > len(net), f"{tenant}: {len(named)} of {len(net)} name the tbf on lo: {[r['evidence'] for r in net[:3]]}"
    out.append(f"{tenant}: top-1 network {len(net)}/{len(mine)} ({share:.0%}), tbf on lo named in {len(named)}")
correct = sorted(r["time_ns"] for r in slowed if r["cause"] == "network" and "qdisc tbf " in r["evidence"])
first = (correct[0] - t0) / 1e9
example = next(r["evidence"] for r in slowed if r["cause"] == "network" and "qdisc tbf " in r["evidence"])
print(f"tool stage median clean <= {clean*1000:.2g} ms ({total:.0f} stages), under tbf {slow_med*1000:.0f} ms; "
      + "; ".join(out) + f"; first correct verdict {first:.2f} s after the fault began; e.g. '{example}'")
PY
) || fail "verdicts under the tbf fault: $result"
pass "tbf on lo: $result"
