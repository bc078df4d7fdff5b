#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fault a minute after the daemon started is an incident (issue 50): the SDK rag-agent at 5
# requests/s, pinned to one CPU, started with a daemon of the default incident settings (200
# stages before a baseline is trusted); 20 s later a neighbour cgroup with 9x the CPU weight
# runs two hogs on that CPU for 30 s. The stages' baselines are younger than the warm-up, yet
# the fault is one incident, caused by run-queue waits, spanning it; nothing before it.
# Takes about 70 seconds.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"

if [ -d /sys/fs/cgroup/cpu ] && ! [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  NOISY=/sys/fs/cgroup/cpu/tailcause-young-$$
  WEIGHT() { echo 9216 >"$NOISY/cpu.shares"; }
else
  NOISY=/sys/fs/cgroup/tailcause-young-$$
  WEIGHT() { echo 900 >"$NOISY/cpu.weight"; }
fi
mkdir -p "$NOISY"
WEIGHT
HOGS=()
# shellcheck disable=SC2016  # on_exit evals these when the test exits
on_exit 'for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; done; HOGS=()'
# shellcheck disable=SC2016
on_exit 'rmdir "$NOISY" 2>/dev/null'

cat >"$WORK/daemon.yaml" <<YAML
probes:
  attrib:
    binary: $AGENT
journal:
  path: $WORK/journal.db
breaker:
  socket: ""
  state_file: ""
YAML
start_daemon --config "$WORK/daemon.yaml"
now_ns() { /usr/bin/python3 -c 'import time; print(time.time_ns())'; }

taskset -c 1 "$AGENT" --tenants ta --rate 5 --duration 65 --report "$WORK/agent.json" \
  >"$WORK/agent.out" 2>&1 &
AGENT_PID=$!
on_exit 'stop_pid AGENT_PID KILL'
sleep 20
FAULT_START=$(now_ns)
for _ in 1 2; do
  sh -c 'echo $$ >"$1/cgroup.procs"; exec taskset -c 1 sh -c "while :; do :; done"' sh "$NOISY" &
  HOGS+=($!)
done
sleep 30
for p in "${HOGS[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
HOGS=()
FAULT_END=$(now_ns)
wait "$AGENT_PID" || fail "the agent failed: $(tail -5 "$WORK/agent.out")"
AGENT_PID=""
sleep 7  # the incident's quiet period (5 s) and a journal write
stop_daemon

"$TAILCAUSE" glitches --journal "$WORK/journal.db" --incidents --json >"$WORK/incidents.json" ||
  fail "glitches --incidents"
/usr/bin/python3 - "$WORK/incidents.json" "$FAULT_START" "$FAULT_END" <<'PYCHECK' ||
import json, sys
inc = json.load(open(sys.argv[1]))
start, end = int(sys.argv[2]), int(sys.argv[3])
for i in inc:
    print(f"{i['tenant']} {i['cause']} {(i['start_ns'] - start) / 1e9:+.1f} s .. "
          f"{(i['end_ns'] - end) / 1e9:+.1f} s: {i['summary']}")
mine = [i for i in inc if i["tenant"] == "ta"]
assert len(mine) == 1, "one incident for the fault"
i = mine[0]
assert i["cause"] == "runqueue", i["cause"]
assert i["start_ns"] >= start - 2e9, "it began with the fault, not before"
assert (i["end_ns"] - i["start_ns"]) >= 0.6 * (end - start), "it spans the fault"
PYCHECK
  fail "no single runqueue incident for the fault: $(cat "$WORK/incidents.json")"
pass "a fault 20 s after start (baselines of ~100 stages, warm-up 200): one runqueue incident"
