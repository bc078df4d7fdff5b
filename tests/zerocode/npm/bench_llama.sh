#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What tracing llama.cpp per token costs it: node-llama-cpp's prebuilt build (llama_agent.mjs,
# closed loop, one CPU) with the daemon attached through the shipped llama_cpp.yaml against
# without, in alternating pairs (the order swapped every pair). The agent counts its own
# completions (24 tokens each); printed, never asserted (DESIGN.md section 6).
#   sudo tests/zerocode/npm/bench_llama.sh BUILD_DIR [PAIRS=6] [SECONDS=10] [RECIPES=yes]
# RECIPES=no runs the daemon without the recipe: what its node-wide probes alone cost the agent
# (every context switch of the hand-off to libuv's worker runs the sched programs).
# Needs tests/zerocode/npm/node_modules (npm ci there, or run tests/e2e/test_zerocode_npm.sh).
set -euo pipefail
BUILD=${1:?usage: bench_llama.sh BUILD_DIR [PAIRS] [SECONDS]}
PAIRS=${2:-6}
SECONDS_EACH=${3:-10}
RECIPES=${4:-yes}
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
NPM="$SRC/tests/zerocode/npm"
[ -d "$NPM/node_modules/node-llama-cpp" ] || { echo "no $NPM/node_modules: npm ci there first" >&2; exit 2; }
WORK=$(mktemp -d /tmp/tailcause-llama-bench.XXXXXX)
DAEMON=""
cleanup() { [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
/usr/bin/python3 "$NPM/write_gguf.py" "$WORK/model.gguf"
RECIPE_FILES="[$SRC/deploy/recipes/llama_cpp.yaml]"
[ "$RECIPES" = yes ] || RECIPE_FILES="[]"
cat >"$WORK/d.yaml" <<YAML
probes:
  attrib:
    recipe_files: $RECIPE_FILES
journal:
  path: ""
breaker:
  socket: ""
  state_file: ""
YAML
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

run_agent() {  # LOG: completions per second over SECONDS_EACH, the first second left out
  rm -f "$WORK/$1"
  taskset -c 1 node "$NPM/llama_agent.mjs" --model "$WORK/model.gguf" --rate 100000 \
    --seconds $((SECONDS_EACH + 2)) --log "$WORK/$1" >/dev/null 2>&1
  awk 'NR == 1 { t0 = $1 } $1 - t0 >= 1000 { n++; last = $1; if (!first) first = $1 }
       END { printf "%.3f\n", (n - 1) * 1000 / (last - first) }' "$WORK/$1"
}
with_daemon() {
  # On the other CPU: what the agent pays in its own context (uprobes, BPF), not CPU sharing.
  taskset -c 0 "$BUILD/tailcause" run --listen "127.0.0.1:$PORT" --config "$WORK/d.yaml" \
    >"$WORK/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null && break; sleep 0.1; done
  run_agent traced.log
  kill "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=""
}

ratios=()
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) -eq 1 ]; then plain=$(run_agent plain.log); traced=$(with_daemon); else traced=$(with_daemon); plain=$(run_agent plain.log); fi
  r=$(awk -v a="$traced" -v b="$plain" 'BEGIN { printf "%.4f", a / b }')
  ratios+=("$r")
  echo "pair $i: untraced $plain completions/s, traced $traced completions/s, ratio $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median traced/untraced throughput over %d pairs: %.4f (cost %.1f%% per token)\n", NR, m, (1 - m) * 100 }'
