#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The example agents do real work and their faults are real: the C++ rag-agent serves two
# tenants from two cgroups (all stages, no errors), a 10% CPU quota on tenant a makes a's
# generation clearly slower than b's in the agent's own measurements, the other faults run,
# SIGTERM stops it cleanly, cgroups are gone afterwards, it still runs without cgroup access,
# bad flags exit 2; the Python agent serves both tenants on the Python SDK.
source "$(dirname "$0")/lib.sh"
require_root

AGENT="$BUILD_DIR/examples/rag-agent"
PY_AGENT="$SRC_DIR/examples/python_agent/rag_agent.py"
SDK_LIB="$BUILD_DIR/sdk/libtailcause_sdk.so"
[ -x "$AGENT" ] || fail "$AGENT missing: build the rag-agent target"
AGENT_PID=""
on_exit 'stop_pid AGENT_PID KILL'

# check_report FILE PYTHON: runs PYTHON with `r` = the parsed report; an AssertionError fails.
check_report() {
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "report check failed for $1"
import json, sys
r = json.load(open(sys.argv[1]))
try:
    exec(sys.argv[2], {"r": r, "STAGES": ("prompt", "embedding", "retrieval", "generation", "tool", "response")})
except AssertionError as e:
    print("assertion:", e, file=sys.stderr)
    sys.exit(1)
PY
}

# start_agent NAME ARGS...: the agent in the background (AGENT_PID); output in $WORK/NAME.*
start_agent() {
  local name=$1
  shift
  "$AGENT" "$@" --report "$WORK/$name.json" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  AGENT_PID=$!
}
# wait_agent NAME: waits, fails unless it exited 0.
wait_agent() {
  local rc=0
  wait "$AGENT_PID" || rc=$?
  AGENT_PID=""
  [ "$rc" -eq 0 ] || { cat "$WORK/$1.err" >&2; fail "agent run '$1' exited $rc"; }
}
# agent_cgroup_dir NAME: the agent's cgroup directory, from its log (waits up to 60 s: the first
# run generates the index files).
agent_cgroup_dir() {
  wait_until 60 "agent '$1' to serve" agent_serves "$1" || agent_not_serving "$1"
  sed -n 's/.*tenant cgroups under \([^ ]*\) (cgroup.*/\1/p' "$WORK/$1.err"
}
# agent_serves NAME: whether its log names its cgroups and says it serves; fails once it exited.
agent_serves() {
  grep -q 'tenant cgroups under [^ ]* (cgroup' "$WORK/$1.err" && grep -q "serving" "$WORK/$1.err" && return 0
  kill -0 "$AGENT_PID" 2>/dev/null || agent_not_serving "$1"
  return 1
}
agent_not_serving() { cat "$WORK/$1.err" >&2; fail "agent '$1' did not start serving"; }

# ---- two tenants, no fault: every stage, no error, one cgroup per tenant ---------------------
start_agent base --tenants a,b --rate 5 --concurrency 2 --duration 5
dir=$(agent_cgroup_dir base)
sleep 1
pa=$(cat "$dir/a/cgroup.procs")
pb=$(cat "$dir/b/cgroup.procs")
{ [ -n "$pa" ] && [ -n "$pb" ]; } || fail "tenant cgroups $dir/a and $dir/b should each hold a worker"
[ "$pa" != "$pb" ] || fail "tenants a and b share a process"
[ -n "$(cat "$dir/_tools/cgroup.procs")" ] || fail "the tool server is not in $dir/_tools"
wait_agent base
[ ! -e "$dir" ] || fail "cgroup $dir left behind"
[ -s "$BUILD_DIR/examples/data/index-a.f32" ] || fail "index file not in build/examples/data"
grep -q "^tenant a: .* completed" "$WORK/base.out" || fail "no summary table on stdout"
check_report "$WORK/base.json" '
assert r["cgroup"]["mode"] in ("v1", "v2") and r["cgroup"]["removed"], r["cgroup"]
assert not r["interrupted"]
for name in ("a", "b"):
    t = r["tenants"][name]
    req = t["requests"]
    assert "error" not in t, t.get("error")
    assert req["completed"] >= 5 and req["failed"] == 0, (name, req)
    for s in STAGES:
        st = t["stages"][s]
        assert st["count"] == req["completed"] and st["errors"] == 0, (name, s, st)
        assert 0 < st["p50_seconds"] <= st["p99_seconds"], (name, s, st)
    c = t["cache"]
    assert c["hit"] + c["miss"] + c["stale"] == req["completed"] and c["miss"] > 0, (name, c)
    # Loaded at start with the most asked questions: most lookups hit from the first request.
    assert c["hit"] >= 2 * (c["miss"] + c["stale"]), (name, c)
    assert t["index_bytes_read"] > 0 and t["tokens"] == t["output_tokens_per_request"] * req["completed"], t
    assert t["cgroup"].endswith("/" + name), t["cgroup"]
    print(name, req["completed"], "requests,", round(1e3 * t["cpu_seconds_per_request"], 1), "ms CPU each")
'
pass "two tenants served in their own cgroups, all stages, no errors, cgroups removed"

# ---- quota on a: a's generation p99 at least twice b's, measured by the agent. a's four
# workers (saturated at 8 req/s) share 10% of a CPU, b's need about 25% and are not limited.
# Only a is ever throttled (checked on every attempt). The p99 of a few dozen samples is nearly
# their maximum, so one stall of b's on a busy machine can hide the ratio: up to 3 attempts.
ratio_ok=""
for attempt in 1 2 3; do
  start_agent quota --tenants a,b --rate 8 --concurrency 4 --duration 6 --fault quota:a
  dir=$(agent_cgroup_dir quota)
  case "$dir" in
    */cpu/*) [ "$(cat "$dir/a/cpu.cfs_quota_us")" = 10000 ] || fail "no 10 ms quota on $dir/a" ;;
    *) grep -q '^10000 100000$' "$dir/a/cpu.max" || fail "no 10% cpu.max on $dir/a" ;;
  esac
  wait_agent quota
  [ ! -e "$dir" ] || fail "cgroup $dir left behind"
  check_report "$WORK/quota.json" '
a, b = r["tenants"]["a"], r["tenants"]["b"]
assert a["requests"]["completed"] > 0 and b["requests"]["completed"] > 0
assert a["requests"]["failed"] == 0 and b["requests"]["failed"] == 0
assert a["throttle"]["throttled_periods"] > 0, a["throttle"]
assert b["throttle"]["throttled_periods"] == 0, b["throttle"]
'
  if /usr/bin/python3 - "$WORK/quota.json" <<'PY'; then ratio_ok=1; break; fi
import json, sys
r = json.load(open(sys.argv[1]))
ga = r["tenants"]["a"]["stages"]["generation"]["p99_seconds"]
gb = r["tenants"]["b"]["stages"]["generation"]["p99_seconds"]
print(f"generation p99: a (quota) {1e3 * ga:.1f} ms, b {1e3 * gb:.1f} ms")
sys.exit(0 if ga >= 2 * gb else 1)
PY
  echo "note: attempt $attempt: a's generation p99 not yet 2x b's"
done
[ -n "$ratio_ok" ] || fail "quota:a did not make a's generation p99 2x b's in 3 attempts"
pass "quota:a throttles a and only a; a's generation p99 >= 2x b's"

# ---- the other faults run for real ------------------------------------------------------------
start_agent faults --tenants a,b --rate 3 --duration 4 --vectors 20000 --dim 64 \
  --fault hog:b --fault slow-peer:b --fault cold-cache:a --fault lock:a --fault cache-bust:b
dir=$(agent_cgroup_dir faults)
sleep 0.5
hogs=$(wc -l <"$dir/_hog-b/cgroup.procs")
[ "$hogs" -eq "$(nproc)" ] || fail "expected $(nproc) hogs in $dir/_hog-b, found $hogs"
# cold-cache:a limits a's reads (4,000 a second) in the hierarchy with the block I/O controller:
# v1 blkio beside the cpu one, or v2's own leaf; a's worker is in it.
case "$dir" in
  */cpu*/*) iodir="$(findmnt -n -o TARGET -t cgroup -O blkio | head -1)/${dir##*/}"
            limit=$(cat "$iodir/a/blkio.throttle.read_iops_device" 2>/dev/null) ;;
  *) iodir=$dir limit=$(cat "$dir/a/io.max" 2>/dev/null) ;;
esac
echo "$limit" | grep -qE '^[0-9]+:[0-9]+ (riops=)?4000( |$)' || fail "no read limit on $iodir/a: '$limit'"
grep -q . "$iodir/a/cgroup.procs" || fail "a's worker is not in $iodir/a"
wait_agent faults
[ ! -e "$iodir/a" ] || fail "I/O cgroup $iodir/a left behind"
check_report "$WORK/faults.json" '
a, b = r["tenants"]["a"], r["tenants"]["b"]
for t in (a, b):
    assert t["requests"]["completed"] > 0 and t["requests"]["failed"] == 0, t["requests"]
assert b["pinned_cpu"] is not None and a["pinned_cpu"] is None
assert b["stages"]["tool"]["p50_seconds"] >= 0.3, b["stages"]["tool"]
assert a["stages"]["tool"]["p50_seconds"] < 0.3, a["stages"]["tool"]
assert a["cache"]["miss"] > 0 and a["index_bytes_read"] > 0
# cache-bust: no lookup of b matches, exactly or semantically
assert b["cache"]["hit"] == 0 and b["cache"]["miss"] == b["requests"]["completed"], b["cache"]
'
pass "hog, slow-peer, cold-cache, lock and cache-bust faults run; slow-peer delays only b's tool calls; a's reads limited ($limit); b's cache never hits"

# ---- SIGTERM: stops early, still reports, removes its cgroups, leaves no process --------------
start_agent term --duration 120 --rate 4
dir=$(agent_cgroup_dir term)
sleep 2
kill -TERM "$AGENT_PID"
wait_agent term
[ ! -e "$dir" ] || fail "cgroup $dir left behind after SIGTERM"
pgrep -f "$WORK/term.json" >/dev/null && fail "agent processes left after SIGTERM"
check_report "$WORK/term.json" '
assert r["interrupted"] and r["cgroup"]["removed"]
for t in r["tenants"].values():
    assert t["requests"]["completed"] > 0 and t["wall_seconds"] < 60, t
'
pass "SIGTERM: clean early stop, report written, cgroups and children gone"

# ---- without cgroup access: runs, warns that tenants share a cgroup ---------------------------
mkdir "$WORK/nobody" && chmod 777 "$WORK/nobody" && chmod o+x "$WORK"
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups "$AGENT" --duration 2 --rate 3 --vectors 2000 \
  --dim 32 --data-dir "$WORK/nobody" --report "$WORK/nobody/r.json" >"$WORK/nobody.out" 2>"$WORK/nobody.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/nobody.err" >&2; fail "unprivileged run exited $rc"; }
grep -q "tenants share the agent's cgroup" "$WORK/nobody.err" || fail "no shared-cgroup warning"
check_report "$WORK/nobody/r.json" '
assert r["cgroup"]["mode"] == "none"
for t in r["tenants"].values():
    assert t["requests"]["completed"] > 0 and t["requests"]["failed"] == 0 and t["cgroup"] == ""
'
pass "unprivileged: runs in a shared cgroup and says so"

# ---- bad flags: exit 2 with a clear message, nothing created ----------------------------------
before=$(find /sys/fs/cgroup -maxdepth 2 -name 'tailcause-agent-*' | wc -l)
expect_usage_error() { expect_exit 2 "$1" "$AGENT" "${@:2}"; }
expect_usage_error "unknown fault kind 'bogus'" --fault bogus
expect_usage_error "tenant 'zz' is not one of --tenants a,b" --fault quota:zz
expect_usage_error "rate must be" --rate 0
expect_usage_error "concurrency must be" --concurrency 0
expect_usage_error "'a' given twice" --tenants a,a
expect_usage_error "dim must be" --dim 4
expect_usage_error "cache-entries must be" --cache-entries 100001
expect_usage_error "nprobe must be" --nprobe 0
expect_usage_error "cache-loop needs a retrieval cache" --cache-entries 0 --cache-loop
expect_usage_error "not expected" --no-such-flag
expect_usage_error "not a cgroup directory" --cgroup-root "$WORK" --duration 1
after=$(find /sys/fs/cgroup -maxdepth 2 -name 'tailcause-agent-*' | wc -l)
[ "$before" -eq "$after" ] || fail "a rejected run left a cgroup behind"
pass "bad flags exit 2 with a clear message"

# ---- the Python agent on the Python SDK -------------------------------------------------------
[ -f "$SDK_LIB" ] || fail "$SDK_LIB missing: build the tailcause_sdk target"
rc=0
TAILCAUSE_SDK_LIB="$SDK_LIB" /usr/bin/python3 "$PY_AGENT" --duration 3 --rate 3 \
  --data-dir "$BUILD_DIR/examples/data" --report "$WORK/py.json" >"$WORK/py.out" 2>"$WORK/py.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/py.err" >&2; fail "python agent exited $rc"; }
check_report "$WORK/py.json" '
assert r["sdk_library"].split("/")[-1].startswith("libtailcause_sdk.so"), r["sdk_library"]  # the versioned file (SONAME .so.0)
for name in ("a", "b"):
    t = r["tenants"][name]
    assert "error" not in t, t.get("error")
    assert t["requests"]["completed"] > 0 and t["requests"]["failed"] == 0, t["requests"]
    for s in STAGES:
        assert t["stages"][s]["count"] == t["requests"]["completed"] and t["stages"][s]["errors"] == 0, (name, s)
'
rc=0
TAILCAUSE_SDK_LIB="$SDK_LIB" /usr/bin/python3 "$PY_AGENT" --fault nope 2>"$WORK/py-bad.err" || rc=$?
{ [ "$rc" -eq 2 ] && grep -q "unknown fault kind" "$WORK/py-bad.err"; } || fail "python agent: bad fault should exit 2"
pass "python agent serves both tenants through every stage"
