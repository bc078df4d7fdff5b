#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault matrix (issue 4): `tailcause demo` runs the example agent with each fault on tenant
# ta, and ta's glitches are explained by that fault's component — quota: cpu_throttled, CPU hog:
# runqueue, dropped page cache: block_io, slow peer: network, lock contention: lock — while a
# clean run blames nothing a fault would inject.
#
# SLOs, measured on the project's 2-CPU VM (10 s demos): a quiet clean run's stages stay under
# 250 ms (generation P99 40-60 ms) and its retrievals under 25 ms (P99 3-13 ms); quota pushes ta's
# generation to 400-1000 ms, the lock (25 ms after every 4 tokens) to >= 600 ms, the hog (hogs at
# 10x ta's CPU weight) to ~550 ms, the slow peer ta's tool calls to 300+ ms, and the dropped page
# cache (readahead off, ta's reads limited to 4,000 a second as a network disk would serve them:
# 90-95% of the stage in block I/O) ta's retrievals to ~280 ms. Other processes' CPU load (this
# machine is shared: load 14 on 2 CPUs during `make test` next to builds) slows every stage too,
# clean retrievals to 30-75 ms, so no verdict here rests on wall time against an SLO alone:
# a clean run may glitch, but only for CPU contention (runqueue, on_cpu; lock where a retrieval
# joins its helper thread), never for throttling, disk, network or a lock in generation, which
# only a fault brings. A 10 s run is too short for a trustworthy P99, and the agent's small
# retrieval cache misses most lookups by design, so cache breakdowns are left out. The whole
# matrix takes ~90 s.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
DURATION=10s

cat >"$WORK/matrix.yaml" <<'YAML'
glitch:
  request_slo_ms: 60000     # requests are judged through their stages here
  stage_slo_ms: 250
  stage_slos_ms:
    retrieval: 25
  p99_factor: 1000          # SLOs only
  min_samples: 1000000
cache_breakdown:
  min_lookups: 1000000      # off: the agent's LRU cache misses most lookups by design
YAML

# run FAULT: the demo's JSON report in $WORK/FAULT.json
run() {
  "$TAILCAUSE" demo --config "$WORK/matrix.yaml" --fault "$1" --duration "$DURATION" --json \
    >"$WORK/$1.json" 2>"$WORK/$1.err" || fail "demo --fault $1 exited $?: $(tail -5 "$WORK/$1.err")"
}

# verdict FAULT COMPONENT: ta glitched, mostly for COMPONENT, and the slowest such glitch says so;
# for block_io, none of tb's glitches is block_io either.
verdict() {
  /usr/bin/python3 - "$WORK/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
p99 = ", ".join(f"{s['tenant']}/{s['stage']} {s['p99_seconds']*1000:.0f}" for s in d["stages"]
                if s["stage"] in ("retrieval", "generation", "tool"))
if want == "block_io":
    tb_io = [c for c in d["glitch_causes"] if c["tenant"] == "tb" and c["cause"] == want]
    assert not tb_io, f"tb glitched for {want}: {tb_io}"
ta = next(t for t in d["tenants"] if t["tenant"] == "ta")
v = ta["verdict"]
causes = [(c["stage"], c["cause"], c["count"]) for c in d["glitch_causes"] if c["tenant"] == "ta"]
assert v is not None, f"ta did not glitch: {d['headline']}; stages: " + ", ".join(
    f"{s['tenant']}/{s['stage']} p99 {s['p99_seconds']*1000:.0f} ms" for s in d["stages"])
assert v["cause"] == want, f"ta's glitches: {causes}"
ex = v["example"]
assert ex and ex["cause"] == want and want in ex["evidence"], ex
assert ex["culprits"][0]["component"] == want, ex["culprits"]
assert want != "block_io" or "page-cache misses" in ex["evidence"], ex["evidence"]
print(f"{v['count']} of ta's {v['glitches']} glitches in {v['stage']} for {want}: {ex['evidence']} (p99 ms: {p99})")
PY
}

# The clean run first: a cold-cache run leaves ta's index out of the page cache. Read the
# indexes in (an earlier run, or memory pressure, may have evicted them) so that "clean" is.
cat "$BUILD_DIR"/examples/data/index-*.f32 >/dev/null 2>&1 || true
run none
failed=""
# Every case runs and reports; the test fails at the end if any did.
if result=$(/usr/bin/python3 - "$WORK/none.json" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert all(t["requests"] > 0 for t in d["tenants"]) and len(d["tenants"]) == 2, d["tenants"]
def contention(c):  # what other processes' CPU load brings; anything else only a fault does
    return c["cause"] in ("runqueue", "on_cpu") or (c["cause"] == "lock" and c["stage"] == "retrieval")
blamed = [c for c in d["glitch_causes"] if not contention(c)]
assert not blamed, (blamed, [(g["tenant"], g["stage"], g["evidence"]) for g in d["top_glitches"]])
if d["glitches"] == 0:
    assert d["headline"].startswith("no glitches: "), d["headline"]
else:
    print(f"NOTE: {d['glitches']} glitches, all CPU contention from other processes:",
          [(c["tenant"], c["stage"], c["cause"], c["count"]) for c in d["glitch_causes"]])
print(d["headline"], "(p99 ms: " + ", ".join(f"{s['tenant']}/{s['stage']} {s['p99_seconds']*1000:.0f}"
                                             for s in d["stages"]) + ")")
PY
); then
  pass "--fault none: $result"
else
  echo "FAIL: --fault none: $result" >&2
  failed=" none"
fi

for case in quota:cpu_throttled slow-peer:network lock:lock hog:runqueue cold-cache:block_io; do
  fault=${case%%:*} component=${case#*:}
  run "$fault"
  if result=$(verdict "$fault" "$component" 2>&1); then
    pass "--fault $fault: $result"
  else
    echo "FAIL: --fault $fault: $result" >&2
    failed="$failed $fault"
  fi
done
[ -z "$failed" ] || fail "faults not explained by their component:$failed"

# The quota verdict carries the throttling evidence; the hog's cgroup shows among ta's noisy
# neighbours (and in the verdict when it held the CPU the most while ta waited).
/usr/bin/python3 - "$WORK" >"$WORK/evidence.txt" 2>&1 <<'PY' || fail "evidence: $(cat "$WORK/evidence.txt")"
import json, re, sys
w = sys.argv[1]
quota = json.load(open(f"{w}/quota.json"))
ev = next(t for t in quota["tenants"] if t["tenant"] == "ta")["verdict"]["example"]["evidence"]
# Either form of the evidence: cpu.stat periods read inside the stage ("throttled in 9 of 10
# periods"), or, for a stage no reading fell inside, its run queue's own throttle clock
# ("throttled 7 times in the stage").
assert ("throttled in" in ev or re.search(r"throttled [0-9,]+ times? in the stage", ev)) \
    and "quota 0.1 CPU" in ev, ev
assert any(t["cgroup"].endswith("/ta") for t in quota["throttled_cgroups"]), quota["throttled_cgroups"]
hog = json.load(open(f"{w}/hog.json"))
hog_ev = next(t for t in hog["tenants"] if t["tenant"] == "ta")["verdict"]["example"]["evidence"]
pairs = [n for n in hog["noisy_neighbours"] if n["cgroup"].endswith("/ta") and n["by_cgroup"].endswith("/_hog-ta")]
named = "preempted by cgroup" in hog_ev and "/_hog-ta " in hog_ev
# The verdict names the hog from the evidence board; the noisy-neighbour table comes from the
# preemption counters between two scrapes. One of 8 runs (under a full `make test`) found the
# table without the pair while the verdict named it: say so, and fail only when neither does.
assert pairs or named, {"verdict": hog_ev, "neighbours": hog["noisy_neighbours"]}
if not pairs:
    print("NOTE: noisy neighbours lack (ta, _hog-ta):", hog["noisy_neighbours"], file=sys.stderr)
print(f"quota: {ev.split(': ', 1)[-1]}; hog: "
      + (f"_hog-ta preempted ta for {pairs[0]['preempted_seconds']:.2f} s" if pairs else "(table without the pair)")
      + (f"; verdict: preempted by {hog_ev.split('preempted by ', 1)[1]}" if "preempted by" in hog_ev else ""))
PY
pass "evidence: $(cat "$WORK/evidence.txt")"
