#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad input on the glitch path: a malformed OTLP endpoint, an unusable journal path and a
# breaker socket another daemon serves are refused before any probe loads (clear message, exit
# 2, nothing left); a corrupt breaker state file is reported and the daemon starts with closed
# breakers; with the OTLP collector down the daemon keeps serving, counts what it drops, and
# its queue and memory stay flat.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"

bpf_prog_ids >"$WORK/progs.before"
expect_refused() {  # expect_refused NAME PATTERN CONFIG_TEXT
  printf '%s\n' "$3" >"$WORK/bad.yaml"
  expect_exit 2 "$2" "$TAILCAUSE" run --listen "127.0.0.1:$(free_port)" --config "$WORK/bad.yaml"
  no_programs_left "$1"
  pass "$1: exit 2, '$EXIT_LINE'"
}
paths="breaker: {socket: $WORK/b.sock, state_file: $WORK/b.state}
journal: {path: $WORK/j.db}"

expect_refused "malformed OTLP endpoint" "bad.yaml:3: otlp.endpoint: OTLP endpoint 'localhost:4318': expected http://" \
  "$paths
otlp: {endpoint: 'localhost:4318'}"
expect_refused "OTLP port out of range" "otlp.endpoint: .*port must be 1-65535" \
  "$paths
otlp: {endpoint: 'http://127.0.0.1:99999/v1/traces'}"
expect_refused "journal under a regular file" "journal: .*/etc/passwd/journal.db" \
  "breaker: {socket: $WORK/b.sock, state_file: ''}
journal: {path: /etc/passwd/journal.db}"

# A breaker socket another daemon serves: the second one is refused, the first keeps serving.
printf '%s\nprobes: {attrib: {enabled: false}}\n' "$paths" >"$WORK/good.yaml"
start_daemon -c "$WORK/good.yaml"
sleep 0.5
bpf_prog_ids >"$WORK/progs.before"  # the first daemon's programs are its own
expect_refused "breaker socket in use" "breaker socket: .*$WORK/b.sock" \
  "breaker: {socket: $WORK/b.sock, state_file: ''}
journal: {path: ''}"
scrape >/dev/null || fail "the first daemon stopped serving"
[ -S "$WORK/b.sock" ] || fail "the refused daemon removed the first one's socket"
stop_daemon
pass "the first daemon kept its socket and kept serving"

# A corrupt state file: reported, breakers start closed, the daemon runs.
printf 'tailcause-breaker-state v1 boot_id=x monotonic_ns=1\ngarbage here\n' >"$WORK/b.state"
start_daemon -c "$WORK/good.yaml"
grep -q "b.state.*circuit breakers start closed" "$WORK/daemon.log" ||
  fail "corrupt state not reported: $(grep -i breaker "$WORK/daemon.log")"
stop_daemon
pass "corrupt breaker state reported; the daemon started with closed breakers"

# The OTLP collector is down (nothing listens): bounded queue, drops counted, memory flat.
dead=$(free_port)
cat >"$WORK/down.yaml" <<EOF
$paths
probes: {attrib: {binary: $AGENT}}
otlp: {endpoint: "http://127.0.0.1:$dead/v1/traces", sample_normal: 1, budget_spans_per_s: 100000, queue_spans: 2000, batch_spans: 200}
EOF
start_daemon -c "$WORK/down.yaml"
"$AGENT" --tenants ta,tb --rate 25 --concurrency 2 --duration 16 >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
on_exit 'stop_pid AGENT_PID'
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status"; }
sleep 6
rss1=$(rss)
queue1=$(metric_value 'tailcause_otlp_queue_spans')
sleep 8
rss2=$(rss)
queue2=$(metric_value 'tailcause_otlp_queue_spans')
wait $AGENT_PID || fail "agent: $(tail -3 "$WORK/agent.log")"
AGENT_PID=""
errors=$(scrape | awk '/^tailcause_otlp_export_errors_total\{kind="connection"\}/ { print $2 }')
dropped=$(scrape | awk '/^tailcause_otlp_spans_dropped_total/ { s += $2 } END { print s + 0 }')
[ "${errors%.*}" -gt 0 ] 2>/dev/null || fail "no connection errors counted: $(scrape | grep otlp_)"
[ "${dropped%.*}" -gt 0 ] || fail "no spans counted as dropped: $(scrape | grep otlp_spans)"
# The gauge counts the queue (at most queue_spans) plus the batch in flight (batch_spans).
for q in "$queue1" "$queue2"; do
  [ "${q%.*}" -le 2200 ] || fail "queue $q spans over its bound 2000 + 200 in flight"
done
# Flat: the second sample within 8 MiB of the first while spans keep arriving.
[ $((rss2 - rss1)) -lt 8192 ] || fail "memory grew ${rss1} -> ${rss2} KiB with the collector down"
kill -0 "$DAEMON_PID" || fail "daemon died"
pass "collector down: $errors connection errors, $dropped spans dropped, queue $queue1/$queue2 <= 2000 + 200 in flight, RSS ${rss1} -> ${rss2} KiB"
