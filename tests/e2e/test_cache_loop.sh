#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The closed loop between the daemon and libtailcause_cache (tests/testprogs/cache_loop_agent):
# tenant loop-a's cache is filled only by warm-up, tenant loop-b floods the same cache with
# one-off queries. Without the loop, loop-a misses every lookup though the daemon calls it a
# breakdown; with CacheFeedback following the daemon (its socket, through the SDK), loop-a is
# warmed up and hits, loop-b's quota shrinks and loop-a's grows. The daemon's counters agree
# with the library's own, and `tailcause diagnose` reports what the loop did and the hit rate
# before and after.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/testprogs/cache_loop_agent"
[ -x "$AGENT" ] || fail "no $AGENT"
cat >"$WORK/c.yaml" <<YAML
journal: {path: ""}
probes: {tcp: {enabled: false}, block: {enabled: false}}
breaker: {socket: $WORK/breaker.sock, state_file: ""}
cache_breakdown: {window_s: 6, min_lookups: 20, ratio: 0.5, warmup_s: 0}
YAML
start_daemon --config "$WORK/c.yaml"
on_exit stop_daemon
export TAILCAUSE_BREAKER_SOCKET="$WORK/breaker.sock"
value() { awk -F= -v k="$1" '$1 == k { print $2 }' "$2"; }
series() { echo "$1{tenant=\"$2\",cache=\"loop-retrieval\"${3:-}}"; }
number() { metric_value "$1" | awk '{ v = $1 } END { printf "%d", v }'; }  # 0 when absent

# Control: nobody follows the daemon.
"$AGENT" 4 none >"$WORK/none.txt" || fail "agent (none) exited $?"
[ "$(value a.hit_rate_before "$WORK/none.txt")" = "0.000" ] || fail "control: $(cat "$WORK/none.txt")"
[ "$(value a.lookups_after "$WORK/none.txt")" = "0" ] || fail "control warmed up: $(cat "$WORK/none.txt")"
verdict=$(PYTHONPATH="$SRC_DIR/sdk/python" /usr/bin/python3 -c '
import tailcause
a, b = (tailcause.cache_state(t, "loop-retrieval") for t in ("loop-a", "loop-b"))
print(a.state, b.state, "b-competes-more" if b.competition > a.competition else "a-competes-more")')
[ "$verdict" = "breakdown breakdown b-competes-more" ] || fail "the daemon's verdict (Python SDK): $verdict"
[ "$(number "$(series tailcause_cache_actions_total loop-a ',action="warmup"')")" = "0" ] ||
  fail "a warm-up without the loop"
pass "without the loop: loop-a hits 0 of $(value a.lookups_before "$WORK/none.txt") lookups; the daemon says: $verdict"

# The loop, with diagnose watching.
"$TAILCAUSE" diagnose --duration 12s --json --config "$WORK/c.yaml" >"$WORK/diagnose.json" 2>"$WORK/diagnose.err" &
DIAG=$!
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'kill $DIAG 2>/dev/null || true'
wait_until 10 "diagnose to say how it reads throttling" grep -q "throttle:" "$WORK/diagnose.err" || true
sleep 1  # its probes are attached once it says how it reads throttling
"$AGENT" 8 feedback 2.5 >"$WORK/loop.txt" || fail "agent (feedback) exited $?"
tr '\n' ' ' <"$WORK/loop.txt"; echo
before=$(value a.hit_rate_before "$WORK/loop.txt")
after=$(value a.hit_rate_after "$WORK/loop.txt")
awk -v b="$before" -v a="$after" 'BEGIN { exit !(b <= 0.05 && a >= 0.5) }' ||
  fail "loop-a's hit rate before/after the first warm-up: $before -> $after"
[ "$(value feedback.unanswered "$WORK/loop.txt")" = "0" ] || fail "the daemon did not answer"
[ "$(value feedback.warmups "$WORK/loop.txt")" -ge 1 ] || fail "no warm-up"
pass "with the loop: loop-a's hit rate $before -> $after after $(value feedback.warmups "$WORK/loop.txt") warm-up(s)"

# The daemon counted what the library did (control run included: it had no hits, no warm-ups).
warmed=$(number "$(series tailcause_cache_action_entries_total loop-a ',action="warmup"')")
[ "$warmed" = "$(value a.warmed_entries "$WORK/loop.txt")" ] ||
  fail "warmed entries: daemon $warmed, library $(value a.warmed_entries "$WORK/loop.txt")"
hits=$(number "$(series tailcause_cache_lookups_total loop-a ',result="hit"')")
[ "$hits" = "$(value a.hits "$WORK/loop.txt")" ] || fail "loop-a hits: daemon $hits, library $(value a.hits "$WORK/loop.txt")"
base=$(value base_quota_bytes "$WORK/loop.txt")
qa=$(number "$(series tailcause_cache_quota_bytes loop-a)")
qb=$(number "$(series tailcause_cache_quota_bytes loop-b)")
{ [ "$qa" = "$(value a.quota_bytes "$WORK/loop.txt")" ] && [ "$qb" = "$(value b.quota_bytes "$WORK/loop.txt")" ]; } ||
  fail "quotas: daemon $qa/$qb, library $(value a.quota_bytes "$WORK/loop.txt")/$(value b.quota_bytes "$WORK/loop.txt")"
{ [ "$qb" -lt "$base" ] && [ "$qa" -gt "$base" ]; } || fail "quotas: loop-a $qa, loop-b $qb, base $base"
pass "the daemon counts as the library: $warmed entries warmed, $hits hits; quotas a $qa, b $qb (base $base)"
curl -sf "http://127.0.0.1:$PORT/api/v1/caches?tenant=loop-b" | /usr/bin/python3 -c '
import json, sys
row = json.load(sys.stdin)["caches"][0]
# The API history is sampled each second: its quota may be one rebalance behind the scrape.
assert row["quota_bytes"] < float(sys.argv[1]) and 0 <= row["competition"] <= 1, row
print("api: loop-b competition %.2f, quota %.0f" % (row["competition"], row["quota_bytes"]))' "$base" ||
  fail "/api/v1/caches: $(curl -s "http://127.0.0.1:$PORT/api/v1/caches")"

wait "$DIAG" || fail "diagnose exited $?: $(tail -3 "$WORK/diagnose.err")"
/usr/bin/python3 - "$WORK/diagnose.json" "$(value feedback.warmups "$WORK/loop.txt")" <<'PY' || fail "diagnose: $(head -c 800 "$WORK/diagnose.json")"
import json, sys
rows = {r["tenant"]: r for r in json.load(open(sys.argv[1]))["cache_actions"]}
a, b = rows["loop-a"], rows["loop-b"]
assert a["cache"] == "loop-retrieval" and a["warmups"] == int(sys.argv[2]), a
assert a["hit_rate_before"] <= 0.05 and a["hit_rate_after"] >= 0.5, a
assert a["rebalances"] >= 1 and b["rebalances"] == a["rebalances"] and b["warmups"] == 0, (a, b)
assert b["quota_bytes"] < a["quota_bytes"], (a, b)
print(f"diagnose: loop-a {a['warmups']} warm-up(s), hit rate {a['hit_rate_before']:.2f} -> "
      f"{a['hit_rate_after']:.2f}; {a['rebalances']} rebalance(s)")
PY
pass "diagnose reports the loop's actions"
