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

# Prints "REQ_PER_S AGENT_CPU_MS_PER_REQ": the agent's own CPU (all its threads) tells its added
# work (uprobe traps, BPF programs run in its context, the Python wrappers) from the daemon's
# competing for the same 2 cores, which throughput alone mixes up.
agent_rate() {
  "$@" "$PY" "$SRC/tests/zerocode/agent.py" --requests "$REQUESTS" --tool-url "$URL" --tenant bench |
    awk '/^done/ { printf "%.3f %.4f\n", $2 / $3, 1000 * $4 / $2 }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # utime + stime, in clock ticks
plain() { agent_rate env; }
traced() {  # also "DAEMON_CPU_MS_PER_REQ"
  "$BUILD/tailcause" run --config "$WORK/d.yaml" --listen "127.0.0.1:$PORT" >"$WORK/daemon.log" 2>&1 &
  local d=$! before rate
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null && break; sleep 0.1; done
  before=$(cpu_ticks "$d")
  rate=$(agent_rate "$BUILD/tailcause" instrument --entry handle_request --tenant-arg tenant --)
  echo "$rate $(( $(cpu_ticks "$d") - before ))" |
    awk -v hz="$(getconf CLK_TCK)" -v n="$REQUESTS" '{ printf "%s %s %.4f\n", $1, $2, 1000 * $3 / hz / n }'
  kill "$d"; wait "$d" || true
}
p_all=() t_all=() pc_all=() tc_all=() dc_all=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then p=$(plain); t=$(traced); else t=$(traced); p=$(plain); fi
  read -r p pc <<<"$p"
  read -r t tc dc <<<"$t"
  p_all+=("$p") t_all+=("$t") pc_all+=("$pc") tc_all+=("$tc") dc_all+=("$dc")
  echo "round $r: untraced $p req/s ($pc ms CPU/req), instrument+daemon $t req/s" \
    "($tc ms agent CPU/req, $dc ms daemon CPU/req)"
done
"$PY" - "${p_all[*]}" "${t_all[*]}" "${pc_all[*]}" "${tc_all[*]}" "${dc_all[*]}" <<'PY'
import statistics, sys
p, t, pc, tc, dc = ([float(x) for x in a.split()] for a in sys.argv[1:6])
m = statistics.median
print(f"median: untraced {m(p):.2f} req/s, instrument+daemon {m(t):.2f} req/s, "
      f"ratio {m(t) / m(p):.3f} ({(1 - m(t) / m(p)) * 100:+.1f}% loss; goal <= 3%)")
print(f"median agent CPU per request: untraced {m(pc):.3f} ms, instrumented {m(tc):.3f} ms "
      f"(ratio {m(tc) / m(pc):.3f}); the daemon's {m(dc):.3f} ms per request")
PY
