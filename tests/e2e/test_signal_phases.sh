#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A stop signal at any phase of the daemon's life (start-up, probe loading, serving, a reload in
# flight) ends it cleanly: exit 0 once it routes signals, death by the signal itself before
# that, never a crash (139, 134) or a hang. Under systemd or a node's churn a SIGTERM can land
# anywhere; a crash there once showed up only in dmesg. An SDK process runs throughout, so USDT
# attach and detach are among the phases hit.
source "$(dirname "$0")/lib.sh"
require_root

printf 'top_k: 50\n' >"$WORK/config.yaml"
# An SDK process throughout, so every start attaches its USDT sites and every stop detaches them.
TARGET="$BUILD_DIR/testprogs/attrib_target"
[ -x "$TARGET" ] || fail "no $TARGET"
"$TARGET" lock 0xB02 e2e-signals 600000 >"$WORK/target.log" 2>&1 &
# shellcheck disable=SC2034  # stop_pid reads it by name
TARGET_PID=$!
on_exit 'stop_pid TARGET_PID KILL'

# stop_at SIGNAL PHASE DELAY: starts the daemon; PHASE "start" waits DELAY seconds from its
# launch, "ready" from its first answer, "reload" from a SIGHUP sent then after an edit that
# restarts every family. Then sends SIGNAL and checks how the daemon ended.
stop_at() {
  local sig=$1 phase=$2 delay=$3 rc=0 port what
  what="SIG$sig ${delay}s after $phase"
  port=$(free_port)
  "$TAILCAUSE" run --listen "127.0.0.1:$port" --config "$WORK/config.yaml" >"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  if [ "$phase" != start ]; then
    wait_until 10 "the daemon to answer" curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null || true
  fi
  if [ "$phase" = reload ]; then
    # A new label budget restarts every family: the reload detaches and loads for a while.
    printf 'top_k: %d\n' $((RANDOM % 1000 + 51)) >"$WORK/config.yaml"
    kill -HUP "$DAEMON_PID"
  fi
  sleep "$delay"
  kill -"$sig" "$DAEMON_PID"
  wait_until 10 "the daemon to end ($what)" daemon_ended || fail "$what: still running 10 s later"
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=""
  # 0: the daemon stopped itself; 128+15: SIGTERM's default action, before signals are routed.
  # (A background job of a script starts with SIGINT ignored, so SIGINT is sent only once the
  # daemon answers, when its own handler is in place.)
  if [ "$rc" -ne 0 ] && { [ "$sig" != TERM ] || [ "$rc" -ne 143 ]; }; then
    fail "$what: exit $rc"
  fi
  if grep -E "Sanitizer|terminate called|Segmentation|double free|corrupted" "$WORK/daemon.log"; then
    fail "$what: the log shows a crash"
  fi
  echo "$what: exit $rc"
  runs=$((runs + 1))
  [ "$rc" -ne 0 ] || clean=$((clean + 1))
}

daemon_ended() { ! kill -0 "$DAEMON_PID" 2>/dev/null; }
runs=0 clean=0
for delay in 0 0.01 0.03 0.06 0.1 0.2 0.3 0.5 0.8 1.2 2; do stop_at TERM start "$delay"; done
for delay in 0 0.05 0.3; do stop_at INT ready "$delay"; done
for delay in 0 0.05 0.2 0.5 1; do stop_at TERM reload "$delay"; done
# Every run after the daemon answered had its handler in place: those must all be clean stops.
[ "$clean" -ge 8 ] || fail "only $clean of $runs runs stopped themselves (exit 0)"
pass "$runs stop signals across start-up, serving and reloads: no crash, no hang ($clean clean stops)"
