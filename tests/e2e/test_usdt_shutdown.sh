#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGTERM with traced SDK processes running and 30 or more of their USDT probe sites attached:
# the daemon exits cleanly, promptly (it used to sit in D state detaching uprobes one by one,
# 77 ms each under the kernel's event_mutex), and leaves none of its links behind.
# Prints the time from SIGTERM to exit.
source "$(dirname "$0")/lib.sh"
require_root
TARGET="$BUILD_DIR/testprogs/attrib_target"
[ -x "$TARGET" ] || fail "no $TARGET"

# Two copies of attrib_target (28 probe sites each), each waiting for the tracer, then spending
# 60 s in a stage (waiting for a lock): traced throughout.
TARGET_PIDS=()
for copy in a b; do
  cp "$TARGET" "$WORK/target_$copy"
  "$WORK/target_$copy" lock 0xB01 e2e-shutdown 60000 >"$WORK/target_$copy.log" 2>&1 &
  TARGET_PIDS+=($!)
done
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'kill -KILL "${TARGET_PIDS[@]}" 2>/dev/null; wait "${TARGET_PIDS[@]}" 2>/dev/null'
start_daemon

# attached_sites: the probe sites the daemon reports attached in the two copies.
attached_sites() {
  grep -oE "attached .* probe\(s\) in $WORK/target_[ab] \([0-9]+ sites" "$WORK/daemon.log" |
    grep -oE '[0-9]+ sites' | awk '{ n += $1 } END { print n + 0 }'
}
both_attached() { [ "$(grep -cE "attached .* probe\(s\) in $WORK/target_[ab] " "$WORK/daemon.log")" -eq 2 ]; }
wait_until 10 "both copies' probes attached" both_attached || true
sites=$(attached_sites)
[ "$sites" -ge 30 ] || fail "only $sites probe sites attached, want 30 or more"
[ "$(metric_value tailcause_usdt_attached_binaries)" -ge 2 ] || fail "attached binaries gauge below 2"
links=$(find /proc/"$DAEMON_PID"/fd -lname 'anon_inode:bpf_link' 2>/dev/null | wc -l)
pass "$sites probe sites of two SDK binaries attached ($links BPF links held by the daemon)"

t0=$(date +%s%N)
kill -TERM "$DAEMON_PID"
rc=0
# Generous: a daemon stuck detaching is still there after 10 s. Polled every 10 ms, not with
# wait_until (every 0.1 s): the poll is part of the time measured.
for _ in $(seq 1 1000); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.01; done
if kill -0 "$DAEMON_PID" 2>/dev/null; then fail "daemon still running 10 s after SIGTERM"; fi
wait "$DAEMON_PID" || rc=$?
t1=$(date +%s%N)
DAEMON_PID=""
[ "$rc" -eq 0 ] || fail "daemon exited $rc after SIGTERM"
ms=$(((t1 - t0) / 1000000))
echo "figure: SIGTERM to exit with $sites probe sites attached: $ms ms"
# Detaching these one perf-event uprobe at a time took about 4 s here; in parallel uprobe_multi
# links, about 0.1 s. Only a bound the old way clearly exceeds is asserted.
[ "$ms" -lt 2000 ] || fail "SIGTERM to exit took $ms ms with $sites probe sites attached"
grep -q "stopping" "$WORK/daemon.log" || fail "no orderly stop in the log"
pass "daemon exited cleanly after SIGTERM"
