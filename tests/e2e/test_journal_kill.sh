#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The glitch journal survives kill -9 under load: the daemon journals the example agent's
# glitches (a 20 ms stage SLO makes most stages glitch), is killed with SIGKILL three times
# mid-run and restarted; each time the database passes SQLite's integrity check, every row a
# reader saw committed just before the kill is still there, no row is duplicated, and the
# restarted daemon goes on appending.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
DB="$WORK/journal.db"
cat >"$WORK/cfg.yaml" <<EOF
probes: {attrib: {binary: $AGENT}}
glitch: {stage_slo_ms: 20, request_slo_ms: 50}
breaker: {socket: "", state_file: ""}
journal: {path: $DB}
EOF

# rows -> "count max_id" as a separate reader sees them (WAL: committed transactions only).
rows() { /usr/bin/python3 -c '
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print(*db.execute("SELECT count(*), coalesce(max(id), 0) FROM glitches").fetchone())' "$DB"; }
# newer_rows ID: whether the journal holds a row past ID (its max id in max).
newer_rows() { read -r _ max <<<"$(rows 2>/dev/null || echo "0 0")"; [ "$max" -gt "$1" ]; }

"$AGENT" --tenants ta,tb --rate 20 --concurrency 2 --duration 30 >"$WORK/agent.log" 2>&1 &
# shellcheck disable=SC2034  # stop_pid reads it by name
AGENT_PID=$!
on_exit 'stop_pid AGENT_PID'
seen_max=0
for round in 1 2 3; do
  start_daemon -c "$WORK/cfg.yaml"
  # Wait for this daemon's own rows, then kill it between two writes' worth of load.
  wait_until 20 "this daemon's journal rows" newer_rows "$seen_max" ||
    fail "round $round: no new journal rows (max id $max)"
  sleep 0.$((RANDOM % 9 + 1))
  read -r _ seen_max <<<"$(rows)"
  kill -9 "$DAEMON_PID"
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=""
  /usr/bin/python3 - "$DB" "$seen_max" <<'PY' || fail "round $round: journal damaged after kill -9"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
seen = int(sys.argv[2])
ids = {r[0] for r in db.execute("SELECT id FROM glitches WHERE id <= ?", (seen,))}
# Ids come from AUTOINCREMENT: rows pruned for age would leave gaps, none are that old here.
assert len(ids) == seen, f"{seen - len(ids)} committed rows lost"
dup = db.execute("""SELECT count(*) FROM (SELECT time_ns, tenant, stage, trace_id, wall_s
                    FROM glitches GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1)""").fetchone()[0]
assert dup == 0, f"{dup} duplicated rows"
torn = db.execute("SELECT count(*) FROM glitches WHERE evidence = '' OR cause = ''").fetchone()[0]
assert torn == 0, f"{torn} rows without evidence or cause"
PY
  pass "kill -9 #$round: integrity ok, all $seen_max rows committed before the kill kept, none duplicated"
done
start_daemon -c "$WORK/cfg.yaml"
before=$seen_max
wait_until 15 "the restarted daemon's journal rows" newer_rows "$before" ||
  fail "the restarted daemon does not append"
pass "restarted daemon appends (max id $before -> $max)"
