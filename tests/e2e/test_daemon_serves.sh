#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon with its built-in defaults attaches every node family and serves metrics that
# promtool accepts without a warning, in both exposition formats.
source "$(dirname "$0")/lib.sh"
require_root

start_daemon
held_prog_ids "$DAEMON_PID" >"$WORK/progs.ours"
[ -s "$WORK/progs.ours" ] || fail "no BPF programs loaded"
for p in sched throttle tcp memory block attrib; do
  [ "$(metric_value "tailcause_probe_attached{probe=\"$p\"}")" = "1" ] || fail "probe $p not attached"
done
pass "all six families attached"

wait_for_series '^tailcause_runqueue_latency_seconds_bucket\{'
wait_for_series '^tailcause_runqueue_length_bucket\{'
scrape >"$WORK/metrics.txt"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/lint.txt" 2>&1 || fail "promtool rejected: $(cat "$WORK/lint.txt")"
[ ! -s "$WORK/lint.txt" ] || fail "promtool warnings: $(cat "$WORK/lint.txt")"
pass "promtool check metrics: no warnings ($(wc -l <"$WORK/metrics.txt") lines)"

grep -q '^tailcause_build_info{' "$WORK/metrics.txt" || fail "no build info"
grep -q '^tailcause_runqueue_latency_seconds_bucket{' "$WORK/metrics.txt" || fail "no run-queue latency"
grep -q '^tailcause_runqueue_length_bucket{' "$WORK/metrics.txt" || fail "no run-queue length"
pass "core series present"

ct=$(curl -sf -o "$WORK/om.txt" -w '%{content_type}' -H 'Accept: application/openmetrics-text; version=1.0.0' "http://127.0.0.1:$PORT/metrics")
case "$ct" in application/openmetrics-text*) ;; *) fail "OpenMetrics not negotiated: $ct" ;; esac
[ "$(tail -n1 "$WORK/om.txt")" = "# EOF" ] || fail "OpenMetrics body does not end with # EOF"
grep -q '^# TYPE tailcause_cpu_throttled_seconds counter' "$WORK/om.txt" || grep -q '^# TYPE tailcause_offcpu_seconds counter' "$WORK/om.txt" || fail "OpenMetrics counter family naming"
pass "OpenMetrics when asked"

for method in POST PUT DELETE; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X "$method" -d 'probes=off' "http://127.0.0.1:$PORT/metrics")
  [ "$code" = "405" ] || fail "$method /metrics answered $code, want 405"
done
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")
[ "$code" = "404" ] || fail "GET /nope answered $code, want 404"
pass "read-only endpoint"

stop_daemon
grep -q "stopping" "$WORK/daemon.log" || fail "no clean shutdown"
# The kernel frees programs asynchronously (RCU, deferred perf-event release): give it a moment.
none_left() { left=$(all_prog_ids | comm -12 "$WORK/progs.ours" -); [ -z "$left" ]; }
wait_until 5 "its BPF programs to be freed" none_left || fail "BPF programs left behind: $left"
pass "clean shutdown, none of its $(wc -l <"$WORK/progs.ours") BPF programs left behind"
