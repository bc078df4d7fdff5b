#!/usr/bin/env bash
# SIGTERM with a traced SDK process running and 30 or more of its USDT probe sites attached:
# the daemon exits cleanly, promptly (it used to sit in D state detaching uprobes one by one,
# 77 ms each under the kernel's event_mutex), and leaves none of its links behind.
# Prints the time from SIGTERM to exit.
source "$(dirname "$0")/lib.sh"
require_root
TARGET="$BUILD_DIR/testprogs/attrib_target"
[ -x "$TARGET" ] || fail "no $TARGET"

# Waits for the tracer, then spends 60 s in a stage (waiting for a lock): traced throughout.
"$TARGET" lock 0xB01 e2e-shutdown 60000 >"$WORK/target.log" 2>&1 &
TARGET_PID=$!
on_exit 'stop_pid TARGET_PID KILL'
start_daemon

sites=""
for _ in $(seq 1 100); do
  sites=$(grep -oE "attached .* probe\(s\) in $TARGET \([0-9]+ sites" "$WORK/daemon.log" |
    grep -oE '[0-9]+ sites' | cut -d' ' -f1 | head -1 || true)
  [ -n "$sites" ] && break
  sleep 0.1
done
[ -n "$sites" ] || fail "attrib_target's probes were not attached"
[ "$sites" -ge 30 ] || fail "only $sites probe sites attached, want 30 or more"
[ "$(metric_value tailcause_usdt_attached_binaries)" -ge 1 ] || fail "attached binaries gauge is 0"
links=$(find /proc/"$DAEMON_PID"/fd -lname 'anon_inode:bpf_link' 2>/dev/null | wc -l)
pass "$sites probe sites of attrib_target attached ($links BPF links held by the daemon)"

t0=$(date +%s%N)
kill -TERM "$DAEMON_PID"
rc=0
# Generous: a daemon stuck detaching is still there after 10 s.
for _ in $(seq 1 1000); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.01; done
if kill -0 "$DAEMON_PID" 2>/dev/null; then fail "daemon still running 10 s after SIGTERM"; fi
wait "$DAEMON_PID" || rc=$?
t1=$(date +%s%N)
DAEMON_PID=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc after SIGTERM"
echo "figure: SIGTERM to exit with $sites probe sites attached: $(((t1 - t0) / 1000000)) ms"
grep -q "stopping" "$WORK/daemon.log" || fail "no orderly stop in the log"
pass "daemon exited cleanly after SIGTERM"
