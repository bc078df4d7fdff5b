#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cache library's locality layout, measured by the daemon (issue 16): retrievals of 8 rows
# (1 KiB each) scattered over an index file, then the same retrievals after CoAccessTracker
# grouped the rows and write_layout() put each group together
# (tests/testprogs/locality_agent). Each retrieval starts with the file out of the page cache
# and readahead off, so the daemon's page-cache misses per retrieval stage are the pages it read:
# they must agree with the kernel's own count (mincore, in the agent) and fall about four-fold.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/testprogs/locality_agent"
[ -x "$AGENT" ] || fail "no $AGENT"
# The index files on a disk-backed file system (tmpfs pages cannot leave the page cache).
DATA=$(mktemp -d "$BUILD_DIR/locality.XXXXXX")
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'rm -rf "$DATA"'
cat >"$WORK/l.yaml" <<YAML
journal: {path: ""}
breaker: {socket: "", state_file: ""}
probes: {attrib: {binary: $AGENT}, tcp: {enabled: false}}
YAML
start_daemon --config "$WORK/l.yaml"
on_exit stop_daemon
"$AGENT" "$DATA" 300 >"$WORK/agent.txt" || fail "agent exited $?: $(cat "$WORK/agent.txt")"
tr '\n' ' ' <"$WORK/agent.txt"; echo

sum_of() {  # METRIC TENANT: summed over the tenant's retrieval series
  scrape | awk -v m="$1" -v t="$2" 'index($0, m "{") == 1 && index($0, "tenant=\"" t "\"") &&
    index($0, "stage=\"retrieval\"") { n += $2 } END { printf "%.6f\n", n + 0 }'
}
value() { awk -F= -v k="$1" '$1 == k { print $2 }' "$WORK/agent.txt"; }
drained() { [ "$(sum_of tailcause_stage_duration_seconds_count loc-layout | cut -d. -f1)" -ge 300 ]; }
wait_until 5 "the last stages to drain from the ring" drained || true
declare -A misses_of ms_of  # per layout: page-cache misses and milliseconds per retrieval
for t in original layout; do
  n=$(sum_of tailcause_stage_duration_seconds_count "loc-$t")
  misses=$(sum_of tailcause_stage_page_cache_misses_total "loc-$t")
  wall=$(sum_of tailcause_stage_duration_seconds_sum "loc-$t")
  awk -v n="$n" 'BEGIN { exit !(n == 300) }' || fail "loc-$t: the daemon saw $n retrievals, want 300"
  daemon=$(awk -v m="$misses" -v n="$n" 'BEGIN { printf "%.3f", m / n }')
  kernel=$(value "$t.pages_per_retrieval")
  # The same pages, counted twice: by the daemon in the stage, by mincore around it.
  awk -v d="$daemon" -v k="$kernel" 'BEGIN { exit !(d >= k - 0.25 && d <= k + 0.25) }' ||
    fail "loc-$t: the daemon counts $daemon page-cache misses per retrieval, mincore $kernel"
  misses_of[$t]=$daemon
  ms_of[$t]=$(awk -v w="$wall" -v n="$n" 'BEGIN { printf "%.3f", 1000 * w / n }')
done
awk -v a="${misses_of[original]}" -v b="${misses_of[layout]}" 'BEGIN { exit !(a >= 3 * b && b > 0) }' ||
  fail "the layout did not cut the misses: ${misses_of[original]} -> ${misses_of[layout]} per retrieval"
echo "retrieval stage (daemon): ${ms_of[original]} ms -> ${ms_of[layout]} ms per retrieval ($(awk -v a="${ms_of[original]}" -v b="${ms_of[layout]}" 'BEGIN { printf "%.2f", a / b }')x)"
pass "locality layout: ${misses_of[original]} -> ${misses_of[layout]} page-cache misses per retrieval (daemon = mincore), $(value groups_found) groups found"
