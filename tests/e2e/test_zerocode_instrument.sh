#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Zero code, Python auto-instrumentation: the same untouched agent (tests/zerocode/agent.py)
# run by `tailcause instrument --entry handle_request --tenant-arg tenant -- python3 agent.py`:
# requests per tenant, stages for FAISS search, PyTorch modules (embedding vs generation) and
# the urllib tool call, and a slow loopback tool server shows as network on the tool stage.
source "$(dirname "$0")/lib.sh"
require_root
require_zerocode_agent  # sets PY and AGENT
[ -f "$BUILD_DIR/sdk/libtailcause_sdk.so" ] || fail "no $BUILD_DIR/sdk/libtailcause_sdk.so"

# Bad commands: exit 2 with a clear line.
expect_exit 2 "not a Python interpreter" "$TAILCAUSE" instrument -- /bin/true
expect_exit 2 "give the command|required" "$TAILCAUSE" instrument
pass "instrument refuses what is not a Python interpreter"

"$PY" "$SRC_DIR/tests/zerocode/tool_server.py" "$WORK/tool.port" 0.3 &
TOOL_PID=$!
on_exit 'stop_pid TOOL_PID'
for _ in $(seq 1 100); do [ -s "$WORK/tool.port" ] && break; sleep 0.1; done
TOOL_URL="http://127.0.0.1:$(cat "$WORK/tool.port")/"

printf 'journal:\n  path: ""\nbreaker:\n  socket: ""\n  state_file: ""\n' >"$WORK/daemon.yaml"
start_daemon --config "$WORK/daemon.yaml"
"$TAILCAUSE" instrument --entry handle_request --tenant-arg tenant -- \
  "$PY" "$AGENT" --tenant zi-alpha --tool-url "$TOOL_URL" --seconds 600 >"$WORK/agent.out" 2>&1 &
AGENT_PID=$!
on_exit 'stop_pid AGENT_PID KILL'

series() { scrape | grep -E "^tailcause_stage_time_seconds_total\{tenant=\"zi-alpha\"" || true; }
sum_of() {  # STAGE [COMPONENT]
  series | awk -v s="$1" -v c="${2:-}" 'index($0, "stage=\"" s "\"") &&
    (c == "" || index($0, "component=\"" c "\"")) { t += $2 } END { printf "%.6f\n", t + 0 }'
}
for _ in $(seq 1 600); do
  n=$(scrape | awk '/^tailcause_requests_total\{tenant="zi-alpha"/ { s += $2 } END { print s + 0 }')
  [ "$n" -ge 8 ] && break
  kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited: $(tail -5 "$WORK/agent.out")"
  sleep 0.2
done
[ "$n" -ge 8 ] || fail "fewer than 8 requests of zi-alpha: $(series | head)"
for s in embedding retrieval generation tool; do
  awk -v v="$(sum_of $s)" 'BEGIN { exit !(v > 0) }' || fail "no $s stage: $(series)"
done
pass "instrumented agent: $n requests of tenant zi-alpha with embedding, retrieval, generation, tool"

tool=$(sum_of tool) net=$(sum_of tool network)
awk -v t="$tool" -v n="$net" 'BEGIN { exit !(n > 0.6 * t && t > 1.5) }' ||
  fail "the 300 ms tool server is not network on the tool stage: tool $tool s, network $net s"
pass "slow tool server: ${net} s of ${tool} s on the tool stage is network"
