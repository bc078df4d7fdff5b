#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sustained slowdowns become incidents (issue 11), and verdicts name the outside culprit (issue
# 10), with faults applied from OUTSIDE a running example agent, the way they reach users:
# - a CPU quota written into tenant ta's cgroup by this script;
# - ta's index file dropped from the page cache every 50 ms (posix_fadvise DONTNEED) while two
#   O_DIRECT writers load the disk from a cgroup of their own, which ta's block_io verdicts must
#   name as whose I/O kept the disk busy;
# - a noisy neighbour: a busy loop per CPU in a cgroup at 10x the CPU weight, which ta's
#   runqueue verdicts must name as the preempting cgroup;
# - a memory limit of 4 MiB on ta's worker, below the 10 MiB of its index that each retrieval
#   reads (--nprobe 24 of 62 lists), whose block_io verdicts must name that memory cgroup.
# Each fault must be exactly one incident of ta's with the right cause (cpu_throttled, block_io,
# runqueue, block_io) holding >= 90% of ta's slowed stages while it lasts (its retrievals for the
# disk and memory faults; slower than 2x and 1 ms over their stage's median in the clean run, as
# the agent measured it itself); tb, untouched by all but the neighbour, gets none with their
# causes; a 60 s clean run gets none. Which stages were slowed
# comes from the journal's glitch rows: with a 1 ms stage SLO every stage of 1 ms or more is
# journaled with its wall time. Other processes' CPU load (the machine is shared with builds)
# may slow stages too: an incident it causes (runqueue, on_cpu) outside the faults is reported,
# as is tb's block_io incident while the disk writers run (the disk is the node's), never
# another one with a fault's cause. Printed per fault: recall and precision, the verdicts' top-1
# share and the time to the first right one; the top-1 share is also printed among the stages
# slower than any the clean run slowed, the fault's doing for certain, and failed under 0.8.
# Takes about 5 minutes.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"
RATE=8

write_config() {  # write_config JOURNAL
  cat >"$WORK/daemon.yaml" <<YAML
glitch:
  request_slo_ms: 3600000
  stage_slo_ms: 1           # every stage of 1 ms or more is a journal row: the test's timings
  p99_factor: 1000
  min_samples: 1000000
  incident:
    min_samples: 100        # 12 s of the agent at $RATE requests/s
probes:
  attrib:
    binary: $AGENT
breaker:
  socket: ""
  state_file: ""
cache_breakdown:
  min_lookups: 1000000
journal:
  path: $1
YAML
}

now_ns() { /usr/bin/python3 -c 'import time; print(time.time_ns())'; }

AGENT_PID=""
on_exit 'stop_pid AGENT_PID'
FAULT_PIDS=()
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'for p in "${FAULT_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; FAULT_PIDS=()'
QUOTA_FILE=""
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit '[ -n "$QUOTA_FILE" ] && [ -e "$QUOTA_FILE" ] && echo -1 >"$QUOTA_FILE"'

# run_agent DURATION LOG: the agent in the background (AGENT_PID). Without its retrieval cache:
# with the cache (loaded with the most asked questions) 85-90% of retrievals never read the
# index, too few to judge the disk fault's recall on. Each retrieval scans 24 of the index's 62
# lists (10 MiB of its 25), a working set the memory fault's limit cannot hold.
run_agent() {
  "$AGENT" --tenants ta,tb --rate "$RATE" --concurrency 2 --duration "$1" --cache-entries 0 --nprobe 24 \
    --report "$WORK/$2.json" >"$WORK/$2.log" 2>&1 &
  AGENT_PID=$!
}

# export_journal NAME: the journal's incidents and glitch rows as $WORK/NAME.{incidents,rows}.json
export_journal() {
  "$TAILCAUSE" glitches --journal "$WORK/$1.db" --incidents --json --limit 100000 \
    >"$WORK/$1.incidents.json" || fail "glitches --incidents on $1"
  "$TAILCAUSE" glitches --journal "$WORK/$1.db" --json --limit 100000 >"$WORK/$1.rows.json" ||
    fail "glitches on $1"
}

# drop_from_cache FILE: FILE out of the page cache, once.
drop_from_cache() {
  /usr/bin/python3 -c 'import os, sys; os.posix_fadvise(os.open(sys.argv[1], os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# The indexes in the page cache first, read afresh and whole (an earlier test may have dropped
# them, or left pieces read back as small folios: see reread_index).
for f in "$BUILD_DIR"/examples/data/index-*.f32; do
  [ -f "$f" ] || continue  # the agent writes them on its first run
  drop_from_cache "$f"
  cat "$f" >/dev/null
done

# ---- a 60 s clean run: no incident ----------------------------------------------------------
write_config "$WORK/clean.db"
start_daemon --config "$WORK/daemon.yaml"
run_agent 60 clean
wait "$AGENT_PID" || fail "clean agent run: $(tail -5 "$WORK/clean.log")"
AGENT_PID=""
sleep 1.5
stop_daemon
export_journal clean
/usr/bin/python3 - "$WORK" <<'PY' >"$WORK/clean.txt" 2>&1 || fail "clean run: $(cat "$WORK/clean.txt")"
import json, sys
w = sys.argv[1]
inc = json.load(open(f"{w}/clean.incidents.json"))
rows = json.load(open(f"{w}/clean.rows.json"))
assert len(rows) > 500, f"only {len(rows)} journal rows: is the agent traced?"
bad = [i["summary"] for i in inc if i["cause"] not in ("runqueue", "on_cpu", "lock")]  # as CONTENTION below
assert not bad, bad
print(f"no incident over {len(rows)} journaled stages" if not inc else
      f"NOTE: {len(inc)} incident(s), all CPU contention from other processes: "
      + "; ".join(f"{i['tenant']}: {i['summary']}" for i in inc))
PY
pass "60 s clean run: $(cat "$WORK/clean.txt")"

# kill_cgroup DIR: kills every process in the cgroup DIR until it is empty.
kill_cgroup() {
  local procs=()
  for _ in $(seq 1 100); do
    mapfile -t procs < <(cat "$1/cgroup.procs" 2>/dev/null || true)
    [ ${#procs[@]} -gt 0 ] || return 0
    kill -KILL "${procs[@]}" 2>/dev/null || true
    sleep 0.05
  done
}

# ---- faults from outside the running agent ------------------------------------------------
write_config "$WORK/faults.db"
PORT=""
start_daemon --config "$WORK/daemon.yaml"
run_agent 215 faults
leaf=""
ta_cgroup() {  # whether ta's cgroup exists (v1 cpu hierarchy or v2), in leaf
  local d
  for d in /sys/fs/cgroup/cpu/tailcause-agent-"$AGENT_PID"/ta /sys/fs/cgroup/tailcause-agent-"$AGENT_PID"/ta; do
    if [ -d "$d" ]; then leaf=$d; return 0; fi
  done
  return 1
}
wait_until 10 "tenant ta's cgroup" ta_cgroup || fail "no cgroup for tenant ta of agent $AGENT_PID"
index="$BUILD_DIR/examples/data/index-ta.f32"
[ -f "$index" ] || fail "no $index"
# drop_index: ta's index out of the page cache, once.
drop_index() { drop_from_cache "$index"; }
# reread_index: after a fault on the index's reads, the index read into the page cache afresh
# and whole, as it was before the fault. Left as a fault left it, ta's retrieval ran about 2x
# slower for the rest of the run in some runs, after either fault: a shift of the test's own
# making that kept the fault's incident open. The cause is the size of the page cache's folios:
# pieces read back by the agent's own reads are 4 KiB folios, a whole-file read brings large
# ones, and the same preads of 9.6 MiB took 1.29 ms of CPU against 0.63 (retrieval's verdicts
# then read "52% runqueue, 48% on_cpu" at 2.2 ms against 1.1). So ta's worker is stopped
# between the drop and the re-read: a retrieval in between brought its pieces back small, and
# the re-read kept them (seen in a run where the incident of the disk fault did not end). The
# stages it stops for a moment began after the fault: the caller waits GRACE first.
reread_index() {
  local procs
  mapfile -t procs <"$leaf/cgroup.procs"
  kill -STOP "${procs[@]}"
  drop_index
  cat "$index" >/dev/null
  kill -CONT "${procs[@]}"
}
sleep 30  # warm-up: the baselines learn

# Quota: 10% of a CPU, written into ta's cgroup (v1 cpu.cfs_quota_us, or v2 cpu.max).
if [ -e "$leaf/cpu.cfs_quota_us" ]; then
  QUOTA_FILE="$leaf/cpu.cfs_quota_us"
  quota_on() { echo 10000 >"$QUOTA_FILE"; }
  quota_off() { echo -1 >"$QUOTA_FILE"; }
else
  QUOTA_FILE="$leaf/cpu.max"
  quota_on() { echo "10000 100000" >"$QUOTA_FILE"; }
  quota_off() { echo "max 100000" >"$QUOTA_FILE"; }
fi
quota_start=$(now_ns)
quota_on
sleep 20
# Each fault's window ends just before the fault is lifted: a stage begun between lifting it
# and the stamp (starting python takes tens of milliseconds) ran without the fault, and its
# verdict is not the fault's to judge (seen: ta's backlog after the quota, judged as its own).
quota_end=$(now_ns)
quota_off
sleep 25  # the backlog drains, the incident ends (quiet 5 s)

# Dropped page cache: ta's index evicted every 50 ms while two O_DIRECT writers load the disk.
/usr/bin/python3 - "$index" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
while True:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    time.sleep(0.05)
PY
FAULT_PIDS+=($!)
# The writers run in a cgroup of their own: block_io verdicts must name it as whose I/O kept
# the disk busy.
WRITER_CG=/sys/fs/cgroup/cpu/tailcause-e2e-writer-$$
[ -d /sys/fs/cgroup/cpu ] || WRITER_CG=/sys/fs/cgroup/tailcause-e2e-writer-$$
mkdir "$WRITER_CG"
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'rmdir "$WRITER_CG" 2>/dev/null'
for n in 1 2; do
  (echo "$BASHPID" >"$WRITER_CG/cgroup.procs"
   while :; do dd if=/dev/zero of="$WORK/direct$n" bs=1M count=64 oflag=direct conv=fsync status=none; done) &
  FAULT_PIDS+=($!)
done
cache_start=$(now_ns)
sleep 20
cache_end=$(now_ns)
# Everything in the writers' cgroup (the loops and their dd), then the evictor.
kill_cgroup "$WRITER_CG"
for p in "${FAULT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
FAULT_PIDS=()
rm -f "$WORK"/direct?
sleep 2  # GRACE: the stages begun under the fault end before reread_index stops ta's worker
reread_index
sleep 18  # the incident ends

# A noisy neighbour: a busy loop per CPU in a cgroup of its own at 10x the default CPU weight.
HOG_CG=/sys/fs/cgroup/cpu/tailcause-e2e-hog-$$
[ -d /sys/fs/cgroup/cpu ] || HOG_CG=/sys/fs/cgroup/tailcause-e2e-hog-$$
mkdir "$HOG_CG"
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'kill_cgroup "$HOG_CG"; rmdir "$HOG_CG" 2>/dev/null'
if [ -e "$HOG_CG/cpu.shares" ]; then echo 10240 >"$HOG_CG/cpu.shares"; else echo 1000 >"$HOG_CG/cpu.weight"; fi
hog_start=$(now_ns)
for _ in $(seq 1 "$(nproc)"); do
  (echo "$BASHPID" >"$HOG_CG/cgroup.procs"; while :; do :; done) &
done
sleep 15
hog_end=$(now_ns)
kill_cgroup "$HOG_CG"
sleep 20  # the incident ends

# Memory pressure: a 4 MiB limit on ta's worker, its index dropped from the page cache once so
# that the pages it reads again are charged to the limited cgroup (pages cached before stay
# charged where they were). Every retrieval then reads most of its 10 MiB from the disk while
# the cgroup reclaims what the last one read. With a v1 memory hierarchy (this machine) the
# worker moves into a memory cgroup of its own; on cgroup v2 the limit goes on its leaf (moving
# it would take it out of its CPU cgroup too; not run here).
MEM_ROOT=/sys/fs/cgroup/memory
if [ -e "$MEM_ROOT/memory.limit_in_bytes" ]; then
  MEM_CG=$MEM_ROOT/tailcause-e2e-memcg-$$
  mkdir "$MEM_CG"
  # On exit: the worker (if still there) back to the root, then the cgroup removed.
  # shellcheck disable=SC2016  # on_exit evals it when the test exits
  on_exit 'for p in $(cat "$MEM_CG/cgroup.procs" 2>/dev/null); do echo "$p" >"$MEM_ROOT/cgroup.procs" 2>/dev/null; done; rmdir "$MEM_CG" 2>/dev/null'
  echo 4M >"$MEM_CG/memory.limit_in_bytes"
  memory_on() {
    local p pids
    mapfile -t pids <"$leaf/cgroup.procs"
    for p in "${pids[@]}"; do echo "$p" >"$MEM_CG/cgroup.procs"; done
  }
  memory_off() {  # the cgroup removed too: its pages' charges go to the root
    local p pids
    mapfile -t pids <"$MEM_CG/cgroup.procs"
    for p in "${pids[@]}"; do echo "$p" >"$MEM_ROOT/cgroup.procs"; done
    rmdir "$MEM_CG"
  }
else
  MEM_ROOT=/sys/fs/cgroup MEM_CG=$leaf
  [ -e "$MEM_CG/memory.max" ] || fail "no memory controller on $MEM_CG"
  # shellcheck disable=SC2016  # on_exit evals it when the test exits
  on_exit 'echo max >"$MEM_CG/memory.max" 2>/dev/null'
  memory_on() { echo 4M >"$MEM_CG/memory.max"; }
  memory_off() { echo max >"$MEM_CG/memory.max"; }
fi
memcg_start=$(now_ns)
memory_on
drop_index
sleep 20
memcg_end=$(now_ns)
memory_off
sleep 2  # GRACE, as after the disk fault
reread_index

wait "$AGENT_PID" || fail "agent run: $(tail -5 "$WORK/faults.log")"
AGENT_PID=""
sleep 7  # quiet period, then the last journal batch
scrape >"$WORK/metrics.txt"
stop_daemon
export_journal faults

/usr/bin/python3 - "$WORK" "$quota_start" "$quota_end" "$cache_start" "$cache_end" "/${WRITER_CG##*/}" "$hog_start" "$hog_end" "/${HOG_CG##*/}" "$memcg_start" "$memcg_end" "${MEM_CG#"$MEM_ROOT"}" <<'PY' >"$WORK/faults.txt" 2>&1 || fail "faults: $(cat "$WORK/faults.txt")"
import json, sys
w = sys.argv[1]
writer = sys.argv[6]
hog = (int(sys.argv[7]), int(sys.argv[8]))
hog_cgroup = sys.argv[9]
memcg = (int(sys.argv[10]), int(sys.argv[11]))
memcg_cgroup = sys.argv[12]
quota = (int(sys.argv[2]), int(sys.argv[3]))
cache = (int(sys.argv[4]), int(sys.argv[5]))
faults = {"quota": (quota, "cpu_throttled"), "dropped page cache": (cache, "block_io"),
          "noisy neighbour": (hog, "runqueue"), "memory cgroup limit": (memcg, "block_io")}
INDEX_READS = ("dropped page cache", "memory cgroup limit")  # faults on retrieval's index reads
GRACE = 2_000_000_000   # stages under way when a fault is lifted end slowed after it
TOL = 5_000_000         # journal clocks: realtime - monotonic, taken per batch
MIN_EXCESS = 0.001      # glitch.incident.min_excess_ms: slowed is also 1 ms over the median
# Only other processes' CPU load (this machine is shared with builds) may slow stages besides
# the faults; an incident it causes is reported, never one with a fault's cause.
# "lock": a retrieval joining its helper thread still ends as lock when the job found the helper
# awake: no wake-up by the span thread, so no clocks to read its run-queue wait before it
# attached from (bpf/attrib_critpath.bpf.h, backfill_wake).
CONTENTION = ("runqueue", "on_cpu", "lock")
inc = json.load(open(f"{w}/faults.incidents.json"))
rows = [r for r in json.load(open(f"{w}/faults.rows.json")) if r["stage"] != "request"]
for r in rows:
    r["end"] = r["time_ns"]
    r["start"] = r["time_ns"] - int(r["wall_seconds"] * 1e9)

# Each stage's normal: its median in the clean run, as the agent measured it itself. Slowed:
# 2x that and 1 ms over it, always over the 1 ms SLO, so the journal holds every slowed stage.
report = json.load(open(f"{w}/clean.json"))["tenants"]["ta"]["stages"]
median = {s: v["p50_seconds"] for s, v in report.items() if s != "request" and v["count"] > 0}
threshold = {s: max(2 * m, m + MIN_EXCESS) for s, m in median.items()}

def during(r, window):
    # Started while the fault held (a stage begun after it was lifted is not its doing), ended
    # by GRACE after it.
    return window[0] <= r["start"] <= window[1] and r["end"] <= window[1] + GRACE

def inside(r, i):
    return r["start"] >= i["start_ns"] - TOL and r["end"] <= i["end_ns"] + TOL

def overlaps(i, window):
    return i["start_ns"] <= window[1] + GRACE and i["end_ns"] >= window[0]

def slowed_ta(r):
    return r["tenant"] == "ta" and r["stage"] in threshold and r["wall_seconds"] >= threshold[r["stage"]]

slowed = [r for r in rows if slowed_ta(r)]
# The same machine slows some of ta's stages with no fault (the agent's tenants and its tool
# server share 2 CPUs): their rate in the clean run, per stage, says how many of the wrong
# verdicts during a fault are that background rather than the fault's (printed, not judged).
clean_rows = [r for r in json.load(open(f"{w}/clean.rows.json")) if slowed_ta(r)]
clean_seconds = json.load(open(f"{w}/clean.json"))["duration_seconds"]
clean_slowest = {}
for r in clean_rows:
    clean_slowest[r["stage"]] = max(clean_slowest.get(r["stage"], 0), r["wall_seconds"])
lines, bad, notes = [], [], []
for name, (window, cause) in faults.items():
    mine = [i for i in inc if i["tenant"] == "ta" and overlaps(i, window)]
    # The stages the fault slows: all of ta's under the quota and the neighbour; its retrievals
    # (the index reads) under the disk and memory faults, where the other stages slowed
    # meanwhile are the writers' or the reclaim's CPU use, contention the other faults cover.
    hits = [r for r in slowed if during(r, window) and (name not in INDEX_READS or r["stage"] == "retrieval")]
    if len(mine) != 1:
        bad.append(f"{name}: {len(mine)} incidents of ta's: {[i['summary'] for i in mine]}")
        continue
    i = mine[0]
    within = [r for r in slowed if inside(r, i)]
    recall = sum(1 for r in hits if inside(r, i)) / max(1, len(hits))
    precision = sum(1 for r in within if during(r, window)) / max(1, len(within))
    by_stage = {}
    for r in hits:
        by_stage[r["stage"]] = by_stage.get(r["stage"], 0) + 1
    lines.append(f"{name}: recall {recall:.3f} of {len(hits)} slowed stages {by_stage}, precision "
                 f"{precision:.3f} of {len(within)} inside; {i['summary']}")
    if i["cause"] != cause: bad.append(f"{name}: cause {i['cause']}, want {cause}")
    if len(hits) < 20: bad.append(f"{name}: only {len(hits)} slowed stages: not unmistakable")
    # Where the misses lie says what went wrong: before the incident opened (detection), after
    # it closed (an early end), or in a gap. Printed always, failed on below 0.9.
    missed = sorted((r for r in hits if not inside(r, i)), key=lambda r: r["start"])
    at = lambda t: f"{(t - window[0]) / 1e9:+.2f}s"
    where = (f"fault {at(window[0])}..{at(window[1])}, incident {at(i['start_ns'])}..{at(i['end_ns'])}; "
             "missed: " + ", ".join(f"{r['stage']} {at(r['start'])}..{at(r['end'])} {r.get('cause')}"
                                    for r in missed[:25]))
    if missed: lines.append(f"{name}: {where}")
    if recall < 0.9: bad.append(f"{name}: recall {recall:.3f}; {where}")
# Per fault, the verdicts of ta's slowed stages (all stages for the quota and the neighbour,
# retrieval for the disk and memory faults: the other stages slowed then are CPU contention):
# how many lead with the fault's cause (top-1), and how soon after the fault began the first
# one did. Printed.
for name, ((begin, end), cause) in faults.items():
    stages = {"retrieval"} if name in INDEX_READS else None
    judged = sorted((r for r in slowed if during(r, (begin, end)) and (stages is None or r["stage"] in stages)),
                    key=lambda r: r["end"])
    right = [r for r in judged if r["cause"] == cause]
    first = f"{(right[0]['end'] - begin) / 1e9:.2f} s" if right else "never"
    others, example = {}, {}
    for r in judged:
        if r["cause"] != cause:
            others[r["cause"]] = others.get(r["cause"], 0) + 1
            example.setdefault(r["cause"], r["evidence"])
    lines.append(f"{name}: top-1 {cause} in {len(right)} of {len(judged)} slowed "
                 f"{'stages' if stages is None else 'retrievals'} "
                 f"({len(right) / max(1, len(judged)):.3f}, others {others}); first right verdict "
                 f"{first} after the fault began")
    background = [r for r in clean_rows if r["cause"] in CONTENTION and r["cause"] != cause
                  and (stages is None or r["stage"] in stages)]
    expected = len(background) * (end - begin) / 1e9 / clean_seconds
    contended = sum(n for c, n in others.items() if c in CONTENTION)
    net = len(judged) - min(expected, contended)
    lines.append(f"{name}: the clean run had {len(background)} such slowed stages with a contention "
                 f"verdict in {clean_seconds:.0f} s, {expected:.1f} expected in this window; top-1 "
                 f"net of them {len(right) / max(1, net):.3f}")
    # Per stage, without statistics: the slowed stages longer than the clean run's slowest
    # slowed stage of their kind are the fault's doing for certain (the background never slowed
    # one that far), so their verdicts must lead with the fault's cause. Failed below 0.8, well
    # under what right verdicts gave (0.98-1.00 in three runs), so only a broken attribution fails.
    beyond = [r for r in judged if r["wall_seconds"] > clean_slowest.get(r["stage"], 0)]
    beyond_right = sum(1 for r in beyond if r["cause"] == cause)
    share = beyond_right / max(1, len(beyond))
    lines.append(f"{name}: top-1 {cause} in {beyond_right} of the {len(beyond)} longer than the clean "
                 f"run's slowest of their stage ({share:.3f})")
    if len(beyond) >= 20 and share < 0.8:
        bad.append(f"{name}: top-1 {cause} in {beyond_right} of {len(beyond)} beyond the background")
    if others:  # what the commonest wrong verdict looked like
        worst = max(others, key=others.get)
        lines.append(f"{name}: e.g. {worst}: \"{example[worst]}\"")

# The outside culprit: at least half of ta's verdicts with the fault's cause name the cgroup
# that applied it (the text `needle` in their evidence).
def names_culprit(fault, judged, cause, needle, culprit):
    named = [r for r in judged if needle in r["evidence"]]
    lines.append(f"{fault}: {len(named)} of {len(judged)} {cause} verdicts of ta's name {culprit}"
                 + (f", e.g. \"{named[0]['evidence']}\"" if named else ""))
    if len(judged) < 10:
        bad.append(f"{fault}: only {len(judged)} {cause} verdicts")
    elif len(named) < 0.5 * len(judged):
        bad.append(f"{fault}: {len(named)} of {len(judged)} {cause} verdicts name {culprit}: "
                   + "; ".join(r["evidence"] for r in judged[:5]))

names_culprit("dropped page cache",
              [r for r in rows if r["tenant"] == "ta" and r["cause"] == "block_io" and during(r, cache)],
              "block_io", f"busy with cgroup {writer}'s I/O", writer)
names_culprit("memory cgroup limit",
              [r for r in rows if r["tenant"] == "ta" and r["cause"] == "block_io" and during(r, memcg)],
              "block_io", f"memory cgroup {memcg_cgroup} at", memcg_cgroup)
names_culprit("noisy neighbour", [r for r in slowed if r["cause"] == "runqueue" and during(r, hog)],
              "runqueue", f"preempted by cgroup {hog_cgroup} ", hog_cgroup)
faulted = [i for i in inc if i["tenant"] == "ta" and any(overlaps(i, wdw) for wdw, _ in faults.values())]
for i in inc:
    if i in faulted: continue
    # The writers load the node's one disk: another tenant's read that misses the page cache
    # then waits on them too, a right block_io verdict, not a wrong one.
    shared_disk = i["cause"] == "block_io" and overlaps(i, cache)
    (notes if i["cause"] in CONTENTION or shared_disk else bad).append(
        f"incident of {i['tenant']}'s outside the faults: {i['summary']}")
print("clean medians (ms): " + ", ".join(f"{s} {m*1000:.2f}" for s, m in sorted(median.items())))
print("\n".join(lines))
if notes: print("NOTE (CPU contention from other processes, or the shared disk):", notes)
assert not bad, bad
PY
pass "faults from outside the agent:
$(cat "$WORK/faults.txt")"

# The metrics: ta's incidents counted, none active once they ended. The counter keeps the labels
# an incident opened with: the quota's opens on cpu_throttled, or on lock when ta's retrieval
# shifted first (a join on its throttled helper, above), while its journal row's cause, checked
# above, is cpu_throttled.
grep -qE '^tailcause_incidents_total\{tenant="ta",stage="[^"]+",cause="(cpu_throttled|lock)"\} 1$' "$WORK/metrics.txt" ||
  fail "no quota incident counted: $(grep tailcause_incidents "$WORK/metrics.txt")"
grep -qE '^tailcause_incidents_active\{tenant="ta"\} 0$' "$WORK/metrics.txt" ||
  fail "incidents still active: $(grep tailcause_incidents "$WORK/metrics.txt")"
# tb's counters: as many as the journal's incidents of tb's, whose causes the journal check above
# judged. Their labels are not judged again: the counter keeps the component that led when an
# incident opened, and a short one of tb's can open on a few page-cache misses and end with
# runqueue leading (seen in CI: block_io at open, "runqueue 55% of the extra time" in the journal).
tb_journal=$(/usr/bin/python3 -c 'import json, sys; print(sum(1 for i in json.load(open(sys.argv[1])) if i["tenant"] == "tb"))' "$WORK/faults.incidents.json")
tb_counted=$(awk '/^tailcause_incidents_total\{tenant="tb"/ {n += $NF} END {print n + 0}' "$WORK/metrics.txt")
[ "$tb_counted" = "$tb_journal" ] ||
  fail "tb counted $tb_counted incidents, its journal has $tb_journal: $(grep tailcause_incidents "$WORK/metrics.txt")"
pass "metrics: $(grep -E '^tailcause_incidents' "$WORK/metrics.txt" | tr '\n' ' ')"

# `glitches --incidents` as a table, and the hint under the glitch table.
"$TAILCAUSE" glitches --journal "$WORK/faults.db" --incidents --tenant ta >"$WORK/table.txt"
grep -qE '^[0-9]+ incidents? for tenant ta, newest first' "$WORK/table.txt" || fail "table: $(cat "$WORK/table.txt")"
{ grep -q 'block_io' "$WORK/table.txt" && grep -q 'cpu_throttled' "$WORK/table.txt"; } || fail "table: $(cat "$WORK/table.txt")"
"$TAILCAUSE" glitches --journal "$WORK/faults.db" --tenant ta --limit 3 | grep -qE '[0-9]+ incidents? \(sustained slowdowns?\) in this range' ||
  fail "the glitch table does not point at the incidents"
pass "glitches --incidents: $(head -1 "$WORK/table.txt")"
