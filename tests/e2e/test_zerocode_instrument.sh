#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Zero code, Python auto-instrumentation: the same untouched agent (tests/zerocode/agent.py)
# run by `tailcause instrument --entry handle_request --tenant-arg tenant -- python3 agent.py`:
# requests per tenant, stages for FAISS search, PyTorch modules (embedding vs generation) and
# the urllib tool call, and a slow loopback tool server shows as network on the tool stage; the
# same agent calling the tool with requests and with httpx (Debian's packages) gets one tool
# stage per request from those clients' own hooks.
source "$(dirname "$0")/lib.sh"
require_root
require_zerocode_agent  # sets PY and AGENT
[ -f "$BUILD_DIR/sdk/libtailcause_sdk.so" ] || fail "no $BUILD_DIR/sdk/libtailcause_sdk.so"

# Bad commands: exit 2 with a clear line.
expect_exit 2 "not a Python interpreter" "$TAILCAUSE" instrument -- /bin/true
expect_exit 2 "give the command|required" "$TAILCAUSE" instrument
expect_exit 2 "ignore PYTHONPATH" "$TAILCAUSE" instrument -- "$PY" -E "$AGENT"
expect_exit 2 "not a command string" "$TAILCAUSE" instrument -- "$PY" -c "print(1)"
# The interpreter's own options go in front of -m tailcause.instrument, the program's behind it.
out=$("$TAILCAUSE" instrument -- "$PY" -W error -X dev "$SRC_DIR/tests/zerocode/print_flags.py" -W x 2>&1) ||
  fail "instrument with interpreter options: $out"
[ "$out" = "['default', 'error'] True ['-W', 'x']" ] || fail "instrument with interpreter options: $out"
pass "instrument refuses what is not a Python interpreter or cannot carry its package; passes the interpreter's options"

"$PY" "$SRC_DIR/tests/zerocode/tool_server.py" "$WORK/tool.port" 0.3 &
# shellcheck disable=SC2034  # stop_pid reads it by name
TOOL_PID=$!
on_exit 'stop_pid TOOL_PID'
wait_until 10 "the tool server's port" test -s "$WORK/tool.port" || true
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
eight_requests() {  # the requests of zi-alpha in n; fails the test once the agent has exited
  n=$(scrape | awk '/^tailcause_requests_total\{tenant="zi-alpha"/ { s += $2 } END { print s + 0 }')
  [ "$n" -ge 8 ] && return 0
  kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited: $(tail -5 "$WORK/agent.out")"
  return 1
}
wait_until 120 "8 requests of zi-alpha" eight_requests || true
[ "$n" -ge 8 ] || fail "fewer than 8 requests of zi-alpha: $(series | head)"
for s in embedding retrieval generation tool; do
  awk -v v="$(sum_of $s)" 'BEGIN { exit !(v > 0) }' || fail "no $s stage: $(series)"
done
pass "instrumented agent: $n requests of tenant zi-alpha with embedding, retrieval, generation, tool"

# One stage of each kind a request: the decoding loop's 12 module calls (3 a token) are one
# generation stage, the encoder's 2 one embedding stage (the lingering stage, in C with
# tailcause._speedups). One scrape, so the counts are of one moment: a request under way when
# it was taken has ended some of its stages and not the request.
per_request=$(scrape | awk '
  /^tailcause_requests_total\{tenant="zi-alpha"/ { r += $2 }
  /^tailcause_stage_duration_seconds_count\{tenant="zi-alpha"/ {
    if (index($0, "stage=\"embedding\"")) e += $2; if (index($0, "stage=\"generation\"")) g += $2 }
  END { printf "%d %d %d\n", r, e, g }')
read -r r e g <<<"$per_request"
{ [ $((e - r)) -ge 0 ] && [ $((e - r)) -le 1 ] && [ $((g - r)) -ge 0 ] && [ $((g - r)) -le 1 ]; } ||
  fail "want one embedding and one generation stage a request: $r requests, $e embedding, $g generation"
pass "one embedding and one generation stage a request: $r requests, $e and $g stages"

# A stage that follows a lingering one ends it (TAILCAUSE_STAGE_FOLLOWS), and the last ends with
# its request: the daemon counts none of that as an SDK error.
scrape | awk '/^tailcause_sdk_errors_total\{/ &&
  /kind="(stage_begin_twice|stage_end_without_begin|stage_mismatch|unknown_stage_kind)"/ {
    s += $2 } END { exit !(s == 0) }' ||
  fail "the instrumented agent's stages counted as SDK errors: $(scrape | grep '^tailcause_sdk_errors')"
pass "no SDK error for stages that follow one another or end with their request"

# The tool server takes 150 ms to its headers and 150 ms more to its body, which the agent
# reads after urlopen returns: the tool stage lingers past the call, so it holds both.
read -r tool net tools <<<"$(scrape | awk '
  /^tailcause_stage_time_seconds_total\{tenant="zi-alpha"/ && index($0, "stage=\"tool\"") {
    t += $2; if (index($0, "component=\"network\"")) n += $2 }
  /^tailcause_stage_duration_seconds_count\{tenant="zi-alpha"/ && index($0, "stage=\"tool\"") {
    c += $2 }
  END { printf "%.6f %.6f %d\n", t, n, c }')"
awk -v t="$tool" -v n="$net" -v c="$tools" \
  'BEGIN { exit !(c >= 8 && n > 0.6 * t && t > 0.25 * c) }' ||
  fail "the 300 ms tool server is not 300 ms of network a tool stage:" \
    "$tools stages, $tool s, network $net s"
pass "slow tool server: ${net} s of ${tool} s in $tools tool stages is network, body read included"

# ---- requests and httpx: their own hooks time the whole call as one tool stage ----------------
# requests goes through http.client underneath, whose hook alone would make two tool stages a
# call (request, getresponse); httpx has its own transport, so without its hook there would be
# none. One tool stage per request, mostly network, shows each client's hook at work.
count_of() {  # METRIC TENANT [STAGE]
  scrape | awk -v m="$1" -v t="$2" -v s="${3:-}" 'index($0, m "{") == 1 &&
    index($0, "tenant=\"" t "\"") && (s == "" || index($0, "stage=\"" s "\"")) { n += $2 }
    END { printf "%d\n", n + 0 }'
}
tool_time() {  # TENANT [COMPONENT]: seconds on the tool stage
  scrape | grep -E "^tailcause_stage_time_seconds_total\{tenant=\"$1\"" |
    awk -v c="${2:-}" 'index($0, "stage=\"tool\"") && (c == "" || index($0, "component=\"" c "\"")) { t += $2 }
      END { printf "%.6f\n", t + 0 }'
}
stop_pid AGENT_PID
five_requests() {  # of $tenant, by $client's agent; fails the test once the agent has exited
  [ "$(count_of tailcause_requests_total "$tenant")" -ge 5 ] && return 0
  kill -0 "$AGENT_PID" 2>/dev/null || fail "$client agent exited: $(tail -5 "$WORK/agent-$client.out")"
  return 1
}
for client in requests httpx; do
  if ! "$PY" -c "import $client" 2>/dev/null; then
    [ -n "${CI:-}" ] && fail "python3-$client is needed (scripts/install-deps.sh test installs it)"
    echo "SKIP: python3-$client not installed"; continue
  fi
  tenant="zi-$client"
  "$TAILCAUSE" instrument --entry handle_request --tenant-arg tenant -- \
    "$PY" "$AGENT" --tenant "$tenant" --tool-url "$TOOL_URL" --http-client "$client" \
    --seconds 600 >"$WORK/agent-$client.out" 2>&1 &
  AGENT_PID=$!
  wait_until 120 "5 requests of $tenant" five_requests || true
  stop_pid AGENT_PID
  sleep 0.5  # the last records drain
  requests=$(count_of tailcause_requests_total "$tenant")
  tools=$(count_of tailcause_stage_duration_seconds_count "$tenant" tool)
  [ "$requests" -ge 5 ] || fail "$client: fewer than 5 requests of $tenant"
  # The agent stopped mid-request at most once: one tool stage more, or one fewer.
  { [ $((tools - requests)) -ge -1 ] && [ $((tools - requests)) -le 1 ]; } ||
    fail "$client: $tools tool stages for $requests requests (want one each: the $client hook)"
  tool=$(tool_time "$tenant") net=$(tool_time "$tenant" network)
  awk -v t="$tool" -v n="$net" 'BEGIN { exit !(n > 0.6 * t && t > 1) }' ||
    fail "$client: the 300 ms tool server is not network on the tool stage: tool $tool s, network $net s"
  pass "$client hook: $tools tool stages for $requests requests, ${net} s of ${tool} s network"
done
