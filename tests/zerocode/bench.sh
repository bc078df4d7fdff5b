#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The zero-code agent's throughput with auto-instrumentation and the daemon, against neither,
# alternating in one run (DESIGN.md section 6: printed, never asserted).
#   sudo tests/zerocode/bench.sh BUILD_DIR [ROUNDS=3] [REQUESTS=150]
# Each round runs tests/zerocode/agent.py for REQUESTS requests (tool calls to a loopback server
# answering at once) three ways, in an order that rotates per round: untraced; untraced beside a
# running `tailcause run` (what the daemon's presence costs an agent it does not trace: its
# node-wide probes, its own CPU); under `tailcause instrument` with the daemon attached. The
# agent times its own serving loop, so interpreter start-up and the daemon's start are not
# counted. Besides the ratio of medians it prints the median of the per-round ratios, which
# the host's drift between rounds moves less, and the fastest round's ratio; then the agent's
# added CPU measured inside one process (tests/zerocode/bench_inprocess.py), without and with
# the daemon attached, and with the daemon started and stopped between blocks.
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
start_daemon() {
  "$BUILD/tailcause" run --config "$WORK/d.yaml" --listen "127.0.0.1:$PORT" >"$WORK/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null && break; sleep 0.1; done
}
stop_daemon() { kill "$DAEMON"; wait "$DAEMON" || true; }
beside() { start_daemon; agent_rate env; stop_daemon; }
traced() {  # also "DAEMON_CPU_MS_PER_REQ"
  start_daemon
  local before rate
  before=$(cpu_ticks "$DAEMON")
  rate=$(agent_rate "$BUILD/tailcause" instrument --entry handle_request --tenant-arg tenant --)
  echo "$rate $(( $(cpu_ticks "$DAEMON") - before ))" |
    awk -v hz="$(getconf CLK_TCK)" -v n="$REQUESTS" '{ printf "%s %s %.4f\n", $1, $2, 1000 * $3 / hz / n }'
  stop_daemon
}
p_all=() b_all=() t_all=() pc_all=() bc_all=() tc_all=() dc_all=()
ARMS=(plain beside traced)
for r in $(seq 1 "$ROUNDS"); do
  for k in 0 1 2; do
    arm=${ARMS[$(( (r + k) % 3 ))]}
    case $arm in
      plain) read -r p pc <<<"$(plain)" ;;
      beside) read -r b bc <<<"$(beside)" ;;
      traced) read -r t tc dc <<<"$(traced)" ;;
    esac
  done
  p_all+=("$p") b_all+=("$b") t_all+=("$t") pc_all+=("$pc") bc_all+=("$bc") tc_all+=("$tc") dc_all+=("$dc")
  echo "round $r: untraced $p req/s ($pc ms CPU/req), beside the daemon $b req/s ($bc ms CPU/req)," \
    "instrument+daemon $t req/s ($tc ms agent CPU/req, $dc ms daemon CPU/req)"
done
"$PY" - "${p_all[*]}" "${b_all[*]}" "${t_all[*]}" "${pc_all[*]}" "${bc_all[*]}" "${tc_all[*]}" "${dc_all[*]}" <<'PY'
import statistics, sys
p, b, t, pc, bc, tc, dc = ([float(x) for x in a.split()] for a in sys.argv[1:8])
m = statistics.median
paired = lambda xs, ys: m(y / x for x, y in zip(xs, ys))
print(f"median: untraced {m(p):.2f} req/s, beside the daemon {m(b):.2f}, instrument+daemon "
      f"{m(t):.2f}; ratio {m(t) / m(p):.3f} ({(1 - m(t) / m(p)) * 100:+.1f}% loss; goal <= 3%), "
      f"per-round ratios' median {paired(p, t):.3f}")
print(f"the daemon's presence alone: ratio {m(b) / m(p):.3f}, per-round {paired(p, b):.3f}; "
      f"the agent's probes and wrappers beside it: ratio {m(t) / m(b):.3f}, per-round {paired(b, t):.3f}")
# The host's interference only ever slows a round down, so each arm's fastest round is the one
# least disturbed (timeit's reasoning): its ratio is the cost with the host's noise mostly out.
print(f"fastest round: untraced {max(p):.2f} req/s, beside the daemon {max(b):.2f}, "
      f"instrument+daemon {max(t):.2f}; ratio {max(t) / max(p):.3f} "
      f"({(1 - max(t) / max(p)) * 100:+.1f}% loss), beside the daemon {max(t) / max(b):.3f}; "
      f"least agent CPU per request: untraced {min(pc):.3f} ms, instrumented {min(tc):.3f} ms "
      f"(ratio {min(tc) / min(pc):.3f})")
print(f"median agent CPU per request: untraced {m(pc):.3f} ms, beside the daemon {m(bc):.3f} ms, "
      f"instrumented {m(tc):.3f} ms (ratio {m(tc) / m(pc):.3f}); the daemon's {m(dc):.3f} ms per request")
PY
# The same cost measured inside one process, where neither the host's drift nor a process's own
# speed can move it: the wrappers alone, then with the daemon attached (traps, BPF programs).
export TAILCAUSE_SDK_LIB="$BUILD/sdk/libtailcause_sdk.so"
"$PY" "$SRC/tests/zerocode/bench_inprocess.py" "$URL"
start_daemon
"$PY" "$SRC/tests/zerocode/bench_inprocess.py" "$URL" --wait-for-tracer
stop_daemon
# The goal's comparison in one process: instrumented beside the daemon against neither, with
# the daemon's presence alone (plain blocks beside it) in between.
"$PY" "$SRC/tests/zerocode/bench_inprocess.py" "$URL" --blocks 20 --requests 60 \
  --daemon "$(printf '%q ' "$BUILD/tailcause" run --config "$WORK/d.yaml" --listen "127.0.0.1:$PORT")"
