#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# breaker.socket_group / socket_mode: an agent running as another user reads its breaker when
# it is in the socket's group, and is refused when it is not (the socket stays 0660, never
# world-writable).
source "$(dirname "$0")/lib.sh"
require_root
GROUP=tcbreaker$$
groupadd "$GROUP"
on_exit "groupdel $GROUP"
chmod 755 "$WORK"
mkdir -m 755 "$WORK/run"
cat >"$WORK/c.yaml" <<YAML
journal: {path: ""}
probes: {attrib: {enabled: false}, tcp: {enabled: false}, block: {enabled: false}}
breaker:
  socket: $WORK/run/breaker.sock
  socket_group: $GROUP
  socket_mode: "0660"
  state_file: ""
YAML
start_daemon --config "$WORK/c.yaml"
on_exit stop_daemon
[ "$(stat -c '%a %G' "$WORK/run/breaker.sock")" = "660 $GROUP" ] || fail "socket: $(stat -c '%a %G' "$WORK/run/breaker.sock")"
read_breaker() {  # setpriv group options...
  setpriv --reuid=nobody --regid=nogroup "$@" env PYTHONPATH="$SRC_DIR/sdk/python" \
    /usr/bin/python3 -W ignore -c '
import sys, tailcause
try:
    print(tailcause.breaker_state("tenant-a", "agent-a", socket_path=sys.argv[1]))
except tailcause.BreakerUnavailable as e:
    print("unavailable", e)' "$WORK/run/breaker.sock"
}
out=$(read_breaker --groups="$GROUP")
[ "$out" = "('closed', 0)" ] || fail "member of $GROUP: $out"
pass "a non-root agent in group $GROUP reads its breaker: $out"
out=$(read_breaker --clear-groups)
[[ $out == unavailable*"Permission denied"* ]] || fail "not a member, still answered: $out"
pass "an agent outside the group is refused"
