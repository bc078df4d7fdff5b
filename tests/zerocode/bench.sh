#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The zero-code agent's throughput with auto-instrumentation and the daemon, against neither,
# alternating in one run (DESIGN.md section 6: printed, never asserted).
#   sudo tests/zerocode/bench.sh BUILD_DIR [ROUNDS=3] [REQUESTS=150]
# Each round runs tests/zerocode/agent.py for REQUESTS requests (tool calls to a loopback server
# answering at once) untraced, then under `tailcause instrument` with `tailcause run` attached
# (order alternating per round); the agent times its own serving loop, so interpreter start-up
# and the daemon's start are not counted.
set -euo pipefail
BUILD=${1:?usage: bench.sh BUILD_DIR [ROUNDS] [REQUESTS]}
ROUNDS=${2:-3}
REQUESTS=${3:-150}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/tailcause-zc-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
"$PY" "$SRC/tests/zerocode/tool_server.py" "$WORK/port" 0 &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")/"
printf 'journal:\n  path: ""\nbreaker:\n  socket: ""\n  state_file: ""\n' >"$WORK/d.yaml"
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

agent_rate() {  # prints requests per second
  "$@" "$PY" "$SRC/tests/zerocode/agent.py" --requests "$REQUESTS" --tool-url "$URL" --tenant bench |
    awk '/^done/ { printf "%.3f\n", $2 / $3 }'
}
plain() { agent_rate env; }
traced() {
  "$BUILD/tailcause" run --config "$WORK/d.yaml" --listen "127.0.0.1:$PORT" >"$WORK/daemon.log" 2>&1 &
  local d=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null && break; sleep 0.1; done
  agent_rate "$BUILD/tailcause" instrument --entry handle_request --tenant-arg tenant --
  kill "$d"; wait "$d" || true
}
p_all=() t_all=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then p=$(plain); t=$(traced); else t=$(traced); p=$(plain); fi
  p_all+=("$p") t_all+=("$t")
  echo "round $r: untraced $p req/s, instrument+daemon $t req/s"
done
"$PY" - "${p_all[*]}" "${t_all[*]}" <<'PY'
import statistics, sys
p = [float(x) for x in sys.argv[1].split()]
t = [float(x) for x in sys.argv[2].split()]
mp, mt = statistics.median(p), statistics.median(t)
print(f"median: untraced {mp:.2f} req/s, instrument+daemon {mt:.2f} req/s, "
      f"ratio {mt / mp:.3f} ({(1 - mt / mp) * 100:+.1f}% loss; goal <= 3%)")
PY
