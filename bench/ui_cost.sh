#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The web UI's cost: the page's weight (bytes), one refresh's API bytes, and the daemon's CPU per
# page refresh (the 7 API calls the page makes every 5 s) next to its CPU per /metrics scrape,
# while the example agent serves two tenants with a quota fault. Prints figures and ratios;
# asserts nothing. usage (root): bench/ui_cost.sh [BUILD_DIR] [REFRESHES]
set -euo pipefail
build="$(realpath "${1:-build}")"
n="${2:-60}"
[ "$(id -u)" -eq 0 ] || { echo "ui_cost: run as root (the daemon loads BPF programs)" >&2; exit 2; }
{ [ -x "$build/tailcause" ] && [ -x "$build/examples/rag-agent" ]; } ||
  { echo "ui_cost: build tailcause and rag-agent first" >&2; exit 2; }
work=$(mktemp -d /tmp/tailcause-ui-bench.XXXXXX)
daemon="" agent=""
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/cfg.yaml" <<YAML
probes: {attrib: {binary: $build/examples/rag-agent}}
breaker: {socket: $work/breaker.sock, state_file: $work/breaker.state}
journal: {path: $work/journal.db}
YAML
"$build/tailcause" run -c "$work/cfg.yaml" --listen "127.0.0.1:$port" >"$work/daemon.log" 2>&1 &
daemon=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf "$base/healthz" -o /dev/null && break; sleep 0.1; done
alive() { kill -0 "$daemon" 2>/dev/null || { echo "ui_cost: the daemon exited:" >&2; tail -5 "$work/daemon.log" >&2; exit 1; }; }
alive
"$build/examples/rag-agent" --tenants ta,tb --rate 6 --concurrency 2 --duration 600 --fault quota:ta \
  >"$work/agent.log" 2>&1 &
agent=$!
sleep 20  # history and journal fill
alive

cpu_ticks() { alive; awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }
hz=$(getconf CLK_TCK)
refresh() {
  local total=0 p
  for p in "stages?since=300&step=10" "heatmap/stage?stage=generation&since=900&step=10" \
           "glitches?limit=100&since=3600" "caches?since=60" "contention?since=60" \
           "heatmap/tcp?metric=rtt" "heatmap/layers?since=900"; do
    total=$((total + $(curl -sf "$base/api/v1/$p" | wc -c)))
  done
  echo "$total"
}
# Idle: what the daemon spends with no client (probes, the agent's events, the UI's sampler).
t0=$(cpu_ticks); s0=$(date +%s.%N); sleep 10; t1=$(cpu_ticks); s1=$(date +%s.%N)
calc() { awk "BEGIN { print $1 }"; }
idle_rate=$(calc "($t1 - $t0) / ($s1 - $s0)")
measure() {  # measure CMD: CPU ticks the daemon spent on n runs of CMD beyond its idle rate
  local a b sa sb
  a=$(cpu_ticks); sa=$(date +%s.%N)
  for _ in $(seq 1 "$n"); do "$@" >/dev/null; done
  b=$(cpu_ticks); sb=$(date +%s.%N)
  calc "($b - $a) - $idle_rate * ($sb - $sa)"
}
page=$(curl -sf "$base/" | wc -c)
api_bytes=$(refresh)
r_ticks=$(measure refresh)
s_ticks=$(measure curl -sf "$base/metrics")
per() { awk "BEGIN { v = $1 * 1000 / $hz / $n; printf \"%.2f\", v < 0 ? 0 : v }"; }
echo "page weight: $page bytes (one file, no other request); one refresh: $api_bytes bytes of JSON in 7 API calls"
echo "daemon CPU with no client: $(awk "BEGIN { printf \"%.1f\", $idle_rate * 100 / $hz }")% of a core (probes, agent events, UI sampler)"
echo "daemon CPU per page refresh: $(per "$r_ticks") ms; per /metrics scrape: $(per "$s_ticks") ms ($n of each)"
if awk "BEGIN { exit !($s_ticks > 0) }"; then
  echo "ratio: one page refresh costs $(awk "BEGIN { printf \"%.2f\", $r_ticks / $s_ticks }")x a /metrics scrape"
fi
echo "(CPU from /proc/PID/stat at $hz ticks/s, idle rate subtracted; figures, not limits)"
