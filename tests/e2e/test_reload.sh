#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGHUP reloads the configuration: only families whose settings changed are detached or
# restarted (their BPF programs keep their ids), and a bad new configuration is rejected
# while the running one stays.
source "$(dirname "$0")/lib.sh"
require_root

# reload: SIGHUP, then waits (up to 30 s) for the daemon to log one more "configuration
# reloaded" than before: it logs that after the families are detached and attached.
reload() {
  local before
  before=$(grep -c "configuration reloaded" "$WORK/daemon.log" || true)
  kill -HUP "$DAEMON_PID"
  wait_until 30 "the reload" reloaded_since "$before" || fail "no reload logged within 30 s"
}
# reloaded_since COUNT: whether the log has more reloads than COUNT.
reloaded_since() { [ "$(grep -c "configuration reloaded" "$WORK/daemon.log" || true)" -gt "$1" ]; }

printf 'top_k: 50\n' >"$WORK/config.yaml"
start_daemon --config "$WORK/config.yaml"
held_prog_ids "$DAEMON_PID" >"$WORK/progs.1"
[ -s "$WORK/progs.1" ] || fail "no programs loaded"

# Disable tcp: tcp's programs go away, every other program keeps its id.
printf 'top_k: 50\nprobes:\n  tcp:\n    enabled: false\n' >"$WORK/config.yaml"
reload
[ "$(metric_value 'tailcause_probe_attached{probe="tcp"}')" = "0" ] || fail "tcp still attached after reload"
held_prog_ids "$DAEMON_PID" >"$WORK/progs.2"
[ -s "$WORK/progs.2" ] || fail "all programs gone"
comm -13 "$WORK/progs.1" "$WORK/progs.2" | grep . && fail "programs were reloaded though their settings did not change"
removed=$(comm -23 "$WORK/progs.1" "$WORK/progs.2" | wc -l)
[ "$removed" -gt 0 ] || fail "tcp programs were not detached"
pass "reload detached tcp ($removed programs) and kept the other $(wc -l <"$WORK/progs.2") programs untouched"

# A bad configuration is rejected; the running one stays.
printf 'top_k: 50\nprobes:\n  tcp:\n    enabled: false\n  sched:\n    bogus: 1\n' >"$WORK/config.yaml"
kill -HUP "$DAEMON_PID"
wait_until 30 "the reload's rejection" grep -q "reload rejected" "$WORK/daemon.log" || true
grep -q "reload rejected, keeping the running configuration: .*config.yaml:6: probes.sched.bogus: unknown key" "$WORK/daemon.log" \
  || fail "bad reload not reported clearly"
kill -0 "$DAEMON_PID" || fail "daemon died on a bad reload"
held_prog_ids "$DAEMON_PID" >"$WORK/progs.3"
diff -q "$WORK/progs.2" "$WORK/progs.3" >/dev/null || fail "a rejected reload changed the probes"
[ "$(metric_value 'tailcause_probe_attached{probe="sched"}')" = "1" ] || fail "sched lost"
pass "bad configuration rejected, running one kept"

# Changing a family's own setting restarts just that family.
printf 'top_k: 50\nprobes:\n  tcp:\n    enabled: false\n  sched:\n    runqlen_sparse_hz: 20\n' >"$WORK/config.yaml"
reload
held_prog_ids "$DAEMON_PID" >"$WORK/progs.4"
changed=$(comm -13 "$WORK/progs.3" "$WORK/progs.4" | wc -l)
kept=$(comm -12 "$WORK/progs.3" "$WORK/progs.4" | wc -l)
[ "$changed" -gt 0 ] || fail "sched was not restarted for its new setting"
[ "$kept" -gt 0 ] || fail "other families were restarted too"
pass "sched restarted alone ($changed new programs, $kept kept)"
