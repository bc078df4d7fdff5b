#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The eight diagnostics on a real Prometheus (issue 14): Debian's Prometheus scrapes the daemon
# every second and evaluates the shipped rules, generated from deploy/prometheus/thresholds.yaml
# with a 10 s window and 2 s `for:` (the same generator, an overrides file). The example agent
# runs three times:
#   clean: two tenants, no fault: no alert fires. (The agent's retrieval cache used to break
#          down on every clean run: with a 5 s TTL it hit 30% of lookups at 4 requests/s, so the
#          breakdown alert was right. It now keeps entries 4 minutes and starts with its 96
#          most asked questions loaded, and hits 85-90%: see examples/rag_agent/retrieval_cache.h);
#   faults: six tenants at once, one fault each: quota:q -> TailcauseCpuThrottled (cgroup q),
#          cold-cache:c -> TailcausePageCachePressure (c's retrieval), slow-peer:p ->
#          TailcauseStageNetworkWait (p's tool stage), lock:l -> TailcauseStageLatencyOverSLO (l's
#          generation), entropy:e -> TailcauseOutputAnomaly (e), cache-bust:v ->
#          TailcauseVectorCacheBreakdown (v's retrieval cache: every question carries the user's
#          history, so no lookup matches); each must fire within the run,
#          and once all have, every recording rule, dashboard panel and template-variable query
#          returns series. The agent runs with --cache-loop: each tenant's retrieval cache follows
#          the daemon's verdict on it (its socket), so the cache dashboard's closed-loop panel has
#          quotas and warm-ups (the expressions are evaluated 20 s in at the earliest: a warm-up
#          follows the daemon's breakdown verdict, which wants 20 lookups in its 10 s window),
#          and the daemon's counts of them equal the agent's own;
#   hog:   tenant h alone with its hog: hog:h -> TailcauseNoisyNeighbour (h kept waiting by
#          _hog-h) must fire. It fires because the sched family charges each run-queue wait to
#          the cgroup that held the CPU longest during it (bpf/sched.bpf.c): when a wait was
#          charged to whoever took the CPU first, a tool-server or root-cgroup task that ran for
#          microseconds before the hog got its share, and the wait after a wake-up got nobody, so
#          _hog-h carried 43% to 68% of h's run-queue wait (the alert wants 50%) while the hog held
#          the CPU for 97% of it (bpftrace, counting who ran on h's CPU while h waited); now 98-100%.
# The hog runs apart because it is the whole agent's noisy neighbour, not only h's: its cgroup is
# a sibling of the tenants' inside the agent's cgroup, so at ten times their weight the hogs take
# nearly all of the agent's CPU share (CFS splits a group's weight between CPUs by its load on
# each, here the hogs' on CPU 0, leaving the tenants little against the root cgroup's tasks on
# the other CPU). Run with the others, every tenant waited 0.3 to 2.3 s a second in the run queue
# (0.03 to 0.2 s without the hog): c's retrieval spent 60% to 87% of its time waiting for a CPU,
# its block-I/O share down to 12% for tens of seconds (the alert wants 25%; 37% to 54% without
# the hog), and q's threads, short of CPU anyway, hit their quota in as few as 44 of 627 periods
# (7%, the alert wants 25%; 97% to 100% without the hog).
#   incident: tenant n1 again, now with the lock fault: its generation, 10x its baseline from the
#          clean run (the daemon judges a baseline after 40 stages here), is an incident, and the
#          overview's incidents panel returns n1's series.
# The fault run also puts e under a memory-cgroup limit from outside (below), for the
# memory-cgroup reclaim rule and panel.
# Then query_exemplars returns trace ids that `tailcause glitches --json` also lists.
# Prints per diagnostic the seconds from the fault's start (its tenant's first request seen by
# Prometheus; faults are on from the start) to firing, and the alerts seen on the clean run.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
RUN="/usr/bin/python3 $SRC_DIR/tests/prometheus/alerts_run.py"

# The shipped rules, shortened through the thresholds file. Only the agent's cgroups count as
# inference cgroups here (the machine's other cgroups are not under test), and the stage SLO
# leaves room for the shared machine's load (a clean stage stays under 250 ms; the lock fault
# takes generation to 600 ms and more; tests/e2e/test_fault_matrix.sh has the figures).
cat >"$WORK/overrides.yaml" <<'YAML'
window: 10s
min_samples: 5
selectors:
  inference_cgroups: 'cgroup=~".*/tailcause-agent-[0-9]+/.*"'
glitch: {request_slo_ms: 60000, stage_slo_ms: 400, stage_slos_ms: {}}
diagnostics:
  response_timeout: {for: 2s}
  output_anomaly: {for: 2s}
  cpu_contention: {for: 2s}
  noisy_neighbour: {for: 2s}
  cache_breakdown: {for: 2s}
  memory_pressure: {for: 2s}
  network: {for: 2s}
  gpu_sync: {for: 2s}
YAML
/usr/bin/python3 "$SRC_DIR/deploy/prometheus/generate.py" --overrides "$WORK/overrides.yaml" \
  --rules-out "$WORK/rules.yaml" --dashboards-out "$WORK/dashboards"
promtool check rules "$WORK/rules.yaml" >/dev/null || fail "the test variant of the rules"
/usr/bin/python3 "$SRC_DIR/tests/prometheus/check_exprs.py" --list --rate-interval 10s \
  --rules "$WORK/rules.yaml" --dashboards "$WORK/dashboards" >"$WORK/exprs.jsonl"

cat >"$WORK/cfg.yaml" <<EOF
probes: {attrib: {binary: $AGENT, layers: true}}
journal: {path: $WORK/journal.db}
breaker: {socket: $WORK/breaker.sock, state_file: ""}   # --cache-loop asks it
# The SLOs the rules were generated with; the clean run's 16 s give n1 a baseline (40 stages)
# for the incident phase.
glitch: {slo_file: $WORK/overrides.yaml, incident: {min_samples: 40}}
cache_breakdown: {window_s: 10, warmup_s: 0}  # the daemon's own ratio gauge within the run
EOF
start_daemon -c "$WORK/cfg.yaml"

PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$WORK/rules.yaml"]
scrape_configs:
  - job_name: tailcause
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
YAML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --enable-feature=exemplar-storage --web.listen-address="127.0.0.1:$PROM_PORT" \
  >"$WORK/prometheus.log" 2>&1 &
# shellcheck disable=SC2034  # stop_pid reads it by name
PROM_PID=$!
on_exit 'stop_pid PROM_PID'
PROM="http://127.0.0.1:$PROM_PORT"
target_up() { curl -sf "$PROM/api/v1/query?query=up" 2>/dev/null | grep '"1"\]' >/dev/null; }
wait_until 30 "Prometheus to see the daemon up" target_up || true
curl -sf "$PROM/api/v1/rules" | /usr/bin/python3 -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
assert len(g) == 9 and all(r["health"] != "err" for x in g for r in x["rules"]), g
n = sum(len(x["rules"]) for x in g)
print(f"ok: Prometheus scrapes the daemon and loaded {len(g)} rule groups, {n} rules")' || fail "rules not loaded: $(tail -5 "$WORK/prometheus.log")"

# Clean first: the indexes read into the page cache (a cold-cache run elsewhere drops them).
cat "$BUILD_DIR"/examples/data/index-*.f32 >/dev/null 2>&1 || true
echo '[]' >"$WORK/expect-none.json"
echo "clean run (tenants n1, n2; 16 s):"
$RUN --prom "$PROM" --expect "$WORK/expect-none.json" --out "$WORK/clean.json" --max-seconds 30 \
  -- "$AGENT" --tenants n1,n2 --rate 4 --duration 16 || fail "clean phase"

cat >"$WORK/expect.json" <<'JSON'
[
 {"name": "cpu contention (quota:q)", "alert": "TailcauseCpuThrottled", "tenant": "q", "labels": {"cgroup": ".*/q"}},
 {"name": "page-cache pressure (cold-cache:c)", "alert": "TailcausePageCachePressure", "tenant": "c",
  "labels": {"tenant": "c", "stage": "retrieval"}},
 {"name": "network (slow-peer:p)", "alert": "TailcauseStageNetworkWait", "tenant": "p",
  "labels": {"tenant": "p", "stage": "tool"}},
 {"name": "response timeout (lock:l)", "alert": "TailcauseStageLatencyOverSLO", "tenant": "l",
  "labels": {"tenant": "l", "stage": "generation"}},
 {"name": "output anomaly (entropy:e)", "alert": "TailcauseOutputAnomaly", "tenant": "e", "labels": {"tenant": "e"}},
 {"name": "cache breakdown (cache-bust:v)", "alert": "TailcauseVectorCacheBreakdown", "tenant": "v",
  "labels": {"tenant": "v", "cache": "retrieval"}}
]
JSON
# A memory limit from outside the agent, on e (whose fault is in its outputs, not its timing):
# once the agent made e's cgroup, e's worker moves into a memory cgroup of this test's limited to
# 16 MiB (cgroup v2: the limit goes on e's own cgroup) and e's index (25 MiB) leaves the page
# cache, so what e's retrievals read is charged there and reclaimed over and over: the
# memory-cgroup reclaim rule and panel get series. (8 MiB got e's worker OOM-killed: about 3 MiB
# of it is anonymous memory it allocates after the move.)
MEMCG=""
# tenant_procs TENANT: whether the first cgroup of TENANT (v1 cpu hierarchy or v2) holds a
# process; sets leaf and pids (limit_tenant_memory's).
tenant_procs() {
  local d
  for d in /sys/fs/cgroup/cpu/tailcause-agent-*/"$1" /sys/fs/cgroup/tailcause-agent-*/"$1"; do
    [ -d "$d" ] || continue  # a pattern that matched nothing stays as it is
    leaf=$d
    pids=$(cat "$leaf/cgroup.procs" 2>/dev/null || true)
    [ -n "$pids" ]
    return
  done
  return 1
}
limit_tenant_memory() {  # limit_tenant_memory TENANT, in the background
  local leaf="" pids="" p
  wait_until 30 "a process in tenant $1's cgroup" tenant_procs "$1" ||
    { echo "memory limit: no cgroup of tenant $1" >&2; return 1; }
  if [ -d /sys/fs/cgroup/memory ]; then
    mkdir -p "$MEMCG" && echo $((16 << 20)) >"$MEMCG/memory.limit_in_bytes" &&
      for p in $pids; do echo "$p" >"$MEMCG/cgroup.procs"; done
  else
    echo $((16 << 20)) >"$leaf/memory.max"
  fi || { echo "memory limit: cannot limit tenant $1" >&2; return 1; }
  /usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' \
    "$BUILD_DIR/examples/data/index-$1.f32"
  echo "memory limit: tenant $1 ($pids) at 16 MiB"
}
[ -d /sys/fs/cgroup/memory ] && MEMCG=/sys/fs/cgroup/memory/tailcause-test-$$
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit '[ -n "$MEMCG" ] && [ -d "$MEMCG" ] && rmdir "$MEMCG" 2>/dev/null; true'
limit_tenant_memory e &
LIMITER=$!
echo "fault run (tenants q c p l e v, one fault each; up to 80 s):"
TAILCAUSE_BREAKER_SOCKET="$WORK/breaker.sock" \
  $RUN --prom "$PROM" --expect "$WORK/expect.json" --exprs "$WORK/exprs.jsonl" \
  --exprs-after 20 --out "$WORK/faults.json" --max-seconds 80 \
  -- "$AGENT" --tenants q,c,p,l,e,v --rate 4 --duration 80 --fault quota:q \
  --fault cold-cache:c --fault slow-peer:p --fault lock:l --fault entropy:e --fault cache-bust:v \
  --cache-loop --report "$WORK/faults-agent.json" || fail "fault phase"
wait "$LIMITER" || fail "the outside memory limit on e"
# The closed loop: what each tenant's cache did on the daemon's verdicts, as the agent counted
# it and as the daemon counted it from the cache_action probe.
sleep 1.5  # a scrape after the agent's last action
scrape >"$WORK/after-faults.txt"
/usr/bin/python3 - "$WORK/faults-agent.json" "$WORK/after-faults.txt" <<'PY' || fail "the agent's cache loop"
import json, re, sys
report = json.load(open(sys.argv[1]))
series = {}
for line in open(sys.argv[2]):
    m = re.match(r'(tailcause_cache_action(?:s|_entries)_total)\{(.*)\} (\S+)', line)
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        series[(m.group(1), labels["tenant"], labels["action"])] = float(m.group(3))
warmups = 0
for name, t in report["tenants"].items():
    loop, lib = t["cache_loop"], t["cache_loop"]["library"]
    # A question may go unanswered (100 ms at most each) when the tenant's own quota starves
    # its client: q runs at 10% of a CPU.
    assert loop["polls"] > 0 and loop["unanswered"] < loop["polls"] / 2, (name, loop)
    assert loop["rebalances"] >= 1, (name, loop)
    # One cache_action probe per warm-up batch and per rebalance: the daemon's counts are the
    # library's, exactly.
    got = (series.get(("tailcause_cache_actions_total", name, "warmup"), 0),
           series.get(("tailcause_cache_action_entries_total", name, "warmup"), 0),
           series.get(("tailcause_cache_actions_total", name, "rebalance"), 0))
    assert got == (lib["warmup_batches"], lib["warmed_entries"], lib["rebalances"]), (name, got, lib)
    warmups += loop["warmups"]
assert warmups >= 1, report["tenants"]
print("ok: cache loop: " + ", ".join(
    f'{n} {t["cache_loop"]["warmups"]} warm-up(s) of {t["cache_loop"]["library"]["warmed_entries"]} '
    f'entries, {t["cache_loop"]["rebalances"]} rebalance(s)' for n, t in report["tenants"].items()) +
    "; the daemon counted the same")
PY

cat >"$WORK/expect-hog.json" <<'JSON'
[
 {"name": "noisy neighbour (hog:h)", "alert": "TailcauseNoisyNeighbour", "tenant": "h",
  "labels": {"cgroup": ".*/h", "by_cgroup": ".*/_hog-h"}}
]
JSON
echo "hog run (tenant h with its hog; up to 60 s):"
$RUN --prom "$PROM" --expect "$WORK/expect-hog.json" --out "$WORK/hog.json" --max-seconds 60 \
  -- "$AGENT" --tenants h --rate 4 --duration 60 --fault hog:h || fail "hog phase"

# An incident: n1 again, its generation slowed by the lock fault against its clean baseline.
grep -F '"tailcause-overview.json: Incidents under way (A)"' "$WORK/exprs.jsonl" >"$WORK/exprs-incident.jsonl" ||
  fail "no incidents panel in the dashboards"
echo "incident run (tenant n1 with the lock fault; 12 s):"
$RUN --prom "$PROM" --expect "$WORK/expect-none.json" --exprs "$WORK/exprs-incident.jsonl" \
  --out "$WORK/incident.json" --max-seconds 20 \
  -- "$AGENT" --tenants n1 --rate 4 --duration 14 --fault lock:n1 || fail "incident phase"
/usr/bin/python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))
assert run["empty"] == [], run["empty"]
print("ok: the incidents panel returns series (n1 under the lock fault)")' "$WORK/incident.json" ||
  fail "the incidents panel is empty: $(scrape | grep tailcause_incidents | head -5)"
curl -sf "$PROM/api/v1/query?query=tailcause_incidents_active%7Btenant%3D%22n1%22%7D" |
  grep -q '"value":\[[0-9.]*,"[1-9]' || fail "no incident of n1's in Prometheus"

# Exemplars: trace ids Prometheus stored with the stage histograms, also in the glitch journal.
sleep 1.5  # the journal writes about once a second
"$TAILCAUSE" glitches --journal "$WORK/journal.db" --json --limit 10000 >"$WORK/glitches.json" ||
  fail "tailcause glitches --json"
now=$(date +%s)
curl -sf "$PROM/api/v1/query_exemplars" --data-urlencode 'query=tailcause_stage_duration_seconds_bucket' \
  --data-urlencode "start=$((now - 300))" --data-urlencode "end=$now" >"$WORK/exemplars.json" ||
  fail "query_exemplars"

/usr/bin/python3 - "$WORK" <<'PY' || fail "see above"
import json, sys
w = sys.argv[1]
clean, faults = json.load(open(f"{w}/clean.json")), json.load(open(f"{w}/faults.json"))
runs = [(e, faults) for e in json.load(open(f"{w}/expect.json"))]
runs += [(e, json.load(open(f"{w}/hog.json"))) for e in json.load(open(f"{w}/expect-hog.json"))]
ok = True
# The incidents panel, empty here, is checked in its own run above.
KNOWN_EMPTY = {"tailcause-overview.json: Incidents under way (A)"}
print("time from fault start (the tenant's first request in Prometheus) to firing:")
for e, run in runs:
    t = run["fired"].get(e["name"])
    if t is not None:
        t -= run["tenant_start"][e["tenant"]]
    print(f"  {e['name']:38s} {e['alert']:30s} " +
          (f"{t:5.1f} s ({run['fired'][e['name']]:.1f} s after the agent started)"
           if t is not None else "NOT FIRED"))
    ok &= t is not None
print(f"clean run: {len(clean['firing_seen'])} false firing(s)")
for f in clean["firing_seen"]:
    l = f["labels"]
    print(f"  FALSE: {l['alertname']} "
          f"{l.get('tenant', '')}{l.get('stage', '') and '/' + l['stage']}{l.get('cgroup', '')}"
          f"{l.get('by_cgroup') and ' by ' + l['by_cgroup'] or ''} at {f['at']} s")
ok &= not clean["firing_seen"]
hog = runs[-1][1]
print(f"fault run: {len(faults['firing_seen'])} alert series fired; agent exit {faults['agent_rc']}; "
      f"hog run: {len(hog['firing_seen'])}; agent exit {hog['agent_rc']}")
if faults["empty"] is None:
    print("FAIL: the expressions were never evaluated (not every alert fired)")
    ok = False
elif set(faults["empty"]) - KNOWN_EMPTY:
    print("FAIL: expressions without series: " + "; ".join(faults["empty"]))
    ok = False
else:
    n = sum(1 for l in open(f"{w}/exprs.jsonl") if json.loads(l)["kind"] != "alert")
    print(f"ok: {n - len(faults['empty'])} of {n} recording-rule, panel and variable expressions "
          "returned series" + (f"; without (each checked in a run of its own): {'; '.join(faults['empty'])}"
                               if faults["empty"] else ""))
ex = json.load(open(f"{w}/exemplars.json"))["data"]
ids = {e["labels"].get("trace_id") for s in ex for e in s["exemplars"]} - {None}
journal = {g["trace_id"] for g in json.load(open(f"{w}/glitches.json"))}
both = ids & journal
print(f"exemplars: {len(ids)} trace ids from query_exemplars, {len(journal)} in the journal, "
      f"{len(both)} in both" + (f", e.g. {sorted(both)[0]}" if both else ""))
ok &= bool(both)
sys.exit(0 if ok else 1)
PY
pass "every fault fired its diagnostic's alert on a real Prometheus"

# Reload: the daemon's SLOs come from the same thresholds file; `make reload` sends SIGHUP.
# A stage SLO of 1 ms makes every generation stage (tens of ms) a glitch.
gen_count() { # gen_count METRIC TENANT: the sum over the tenant's generation series
  scrape | awk -v m="$1" -v t="tenant=\"$2\"" 'index($1, m "{") == 1 && index($1, t) && index($1, "stage=\"generation\"") { s += $2 } END { print s + 0 }'
}
sed -i 's/stage_slo_ms: 400/stage_slo_ms: 0/' "$WORK/overrides.yaml"
make -s -C "$SRC_DIR" reload PID="$DAEMON_PID" >/dev/null || fail "make reload"
wait_until 5 "the reload's rejection" grep -q "reload rejected" "$WORK/daemon.log" || true
grep "reload rejected" "$WORK/daemon.log" | grep -q "overrides.yaml:.*glitch.stage_slo_ms" ||
  fail "a bad SLO in the thresholds file was not rejected: $(tail -3 "$WORK/daemon.log")"
sed -i 's/stage_slo_ms: 0/stage_slo_ms: 1/' "$WORK/overrides.yaml"
make -s -C "$SRC_DIR" reload PID="$DAEMON_PID" >/dev/null || fail "make reload"
wait_until 5 "the reload" grep -q "configuration reloaded" "$WORK/daemon.log" || fail "no reload: $(tail -3 "$WORK/daemon.log")"
"$AGENT" --tenants r1 --rate 8 --duration 3 >"$WORK/agent-r1.log" 2>&1 || fail "agent r1: $(tail -3 "$WORK/agent-r1.log")"
sleep 1.5
stages=$(gen_count tailcause_stage_duration_seconds_count r1)
glitches=$(gen_count tailcause_glitches_total r1)
before=$(gen_count tailcause_glitches_total n1) before_stages=$(gen_count tailcause_stage_duration_seconds_count n1)
{ [ "$stages" -gt 0 ] && [ "$glitches" -ge "$stages" ]; } ||
  fail "after the reload to a 1 ms SLO, $glitches glitches in $stages generation stages of r1"
pass "make reload: a bad SLO file is rejected (running SLOs kept); at stage_slo_ms 1 all $stages of r1's generation stages glitched (n1 at 400 ms: $before of $before_stages)"
