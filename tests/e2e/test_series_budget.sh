#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One agent that invents label values cannot grow the daemon or its scrape: an SDK process
# reports 100 tenants x 100 stage names x 10 agents (100,000 combinations, each label within its
# own top_k budget, so only their product is bounded), then four heavy combinations for 25 s.
# Checks, with the default limits (stage_series 64): the daemon's RSS stays under 40 MB and
# /metrics under 1 MB; the stage family holds its 64 series, the heavy combinations among them
# (they arrived after the family was full); the overflow series holds exactly what
# tailcause_series_folded_total counts; and every stage the agent ended is in some series.
# Prints RSS, scrape size and time (not asserted: timings are noisy here).
source "$(dirname "$0")/lib.sh"
require_root
FLOOD="$BUILD_DIR/testprogs/series_flood"
[ -x "$FLOOD" ] || fail "no $FLOOD"

cat >"$WORK/config.yaml" <<'EOF'
top_k: 128            # every tenant, agent and stage name keeps its label: only products fold
journal:
  path: ""
breaker:
  state_file: ""
EOF
start_daemon -c "$WORK/config.yaml"
rss_kb() { awk '/^VmRSS:/ { print $2 }' /proc/"$DAEMON_PID"/status; }
sleep 1
base_rss=$(rss_kb)

flooded=$("$FLOOD" flood 100 100 10) || fail "series_flood flood failed"
heavy=$("$FLOOD" heavy 4 25) || fail "series_flood heavy failed"
total=$((flooded + heavy))
echo "the agent ended $flooded flood stages and $heavy heavy ones"

# Every stage the agent ended, counted in some series (kept or overflow).
counted() {
  scrape | awk '/^tailcause_stage_duration_seconds_count\{/ { n += $2 } END { printf "%d\n", n }'
}
all_counted() { [ "$(counted)" -eq "$total" ]; }
wait_until 30 "the daemon to count all $total stages" all_counted ||
  fail "the daemon counted $(counted) of the $total stages the agent ended (lost: $(scrape | grep '^tailcause_events_lost_total' | tr '\n' ' '))"

# The scrape: its size, and the median of five scrapes' times.
times=()
for _ in 1 2 3 4 5; do
  times+=("$(curl -sf -o "$WORK/metrics.txt" -w '%{time_total}' "http://127.0.0.1:$PORT/metrics")")
done
size=$(stat -c %s "$WORK/metrics.txt")
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
rss=$(rss_kb)
echo "RSS ${base_rss} kB before, ${rss} kB after; /metrics ${size} bytes, median scrape ${median} s"
[ "$rss" -lt $((40 * 1024)) ] || fail "RSS ${rss} kB, over 40 MB"
[ "$size" -lt $((1024 * 1024)) ] || fail "/metrics is ${size} bytes, over 1 MB"
pass "RSS and /metrics within their budget"

value() { awk -v s="$1" '$1 == s { print $2 }' "$WORK/metrics.txt"; }
[ "$(value 'tailcause_series{family="stage"}')" = 64 ] ||
  fail "stage series: $(value 'tailcause_series{family="stage"}'), not the limit 64"
[ "$(value 'tailcause_series_limit{family="stage"}')" = 64 ] || fail "no stage series limit"
for c in 0 1 2 3; do
  grep -q "^tailcause_stage_duration_seconds_count{tenant=\"heavy-tenant\",agent=\"heavy-agent\",stage=\"heavy-$c\"}" \
    "$WORK/metrics.txt" || fail "the heavy combination heavy-$c has no series of its own"
done
pass "the stage family holds 64 series, the four heavy combinations among them"

other=$(value 'tailcause_stage_duration_seconds_count{tenant="__other__",agent="__other__",stage="__other__"}')
folded=$(value 'tailcause_series_folded_total{family="stage"}')
{ [ -n "$other" ] && [ "$other" = "$folded" ]; } ||
  fail "the overflow series counts ${other:-nothing}, tailcause_series_folded_total says ${folded:-nothing}"
# All but the stages of kept series folded: at least the 100,000 combinations less 64.
[ "${folded%.*}" -ge $((flooded - 64)) ] || fail "only $folded stages folded of $flooded"
pass "$folded stages folded into the overflow series, as tailcause_series_folded_total counts"

# The web UI's stage view says so (the API it draws from): the stage family, at its limit, and
# what it folded over the last five minutes.
curl -sf "http://127.0.0.1:$PORT/api/v1/stages?since=300&step=10" | /usr/bin/python3 -c '
import json, sys
b = {x["family"]: x for x in json.load(sys.stdin)["series_budget"]}
s = b.get("stage") or sys.exit(f"no stage family in series_budget: {b}")
assert s["series"] == 64 and s["limit"] == 64 and s["folded"] >= 99936, s
print(f"ok: the stages API reports the stage family folding: {s}")' ||
  fail "the stages API does not report the folding"
