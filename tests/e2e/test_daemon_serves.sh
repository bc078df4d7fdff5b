#!/usr/bin/env bash
# The daemon with its built-in defaults attaches every node family and serves metrics that
# promtool accepts without a warning, in both exposition formats.
source "$(dirname "$0")/lib.sh"
require_root

bpf_prog_ids >"$WORK/progs.before"
start_daemon
[ "$(bpf_prog_ids | wc -l)" -gt "$(wc -l <"$WORK/progs.before")" ] || fail "no BPF programs loaded"
for p in sched throttle tcp memory block; do
  [ "$(metric_value "infertrace_probe_attached{probe=\"$p\"}")" = "1" ] || fail "probe $p not attached"
done
pass "all five families attached"

scrape >"$WORK/metrics.txt"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/lint.txt" 2>&1 || fail "promtool rejected: $(cat "$WORK/lint.txt")"
[ ! -s "$WORK/lint.txt" ] || fail "promtool warnings: $(cat "$WORK/lint.txt")"
pass "promtool check metrics: no warnings ($(wc -l <"$WORK/metrics.txt") lines)"

grep -q '^infertrace_build_info{' "$WORK/metrics.txt" || fail "no build info"
grep -q '^infertrace_runqueue_latency_seconds_bucket{' "$WORK/metrics.txt" || fail "no run-queue latency"
grep -q '^infertrace_runqueue_length_bucket{' "$WORK/metrics.txt" || fail "no run-queue length"
pass "core series present"

ct=$(curl -sf -o "$WORK/om.txt" -w '%{content_type}' -H 'Accept: application/openmetrics-text; version=1.0.0' "http://127.0.0.1:$PORT/metrics")
case "$ct" in application/openmetrics-text*) ;; *) fail "OpenMetrics not negotiated: $ct" ;; esac
[ "$(tail -n1 "$WORK/om.txt")" = "# EOF" ] || fail "OpenMetrics body does not end with # EOF"
grep -q '^# TYPE infertrace_cpu_throttled_seconds counter' "$WORK/om.txt" || grep -q '^# TYPE infertrace_offcpu_seconds counter' "$WORK/om.txt" || fail "OpenMetrics counter family naming"
pass "OpenMetrics when asked"

code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")
[ "$code" = "405" ] || fail "POST /metrics answered $code, want 405"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")
[ "$code" = "404" ] || fail "GET /nope answered $code, want 404"
pass "read-only endpoint"

stop_daemon
grep -q "stopping" "$WORK/daemon.log" || fail "no clean shutdown"
bpf_prog_ids >"$WORK/progs.after"
diff "$WORK/progs.before" "$WORK/progs.after" >/dev/null || fail "BPF programs left behind: $(diff "$WORK/progs.before" "$WORK/progs.after")"
pass "clean shutdown, no BPF program left behind"
