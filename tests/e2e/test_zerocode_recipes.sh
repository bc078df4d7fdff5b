#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Zero code, uprobe recipes: a RAG agent on Debian's python3-torch and python3-faiss
# (tests/zerocode/agent.py, untouched), two tenants in two cgroups, named by an identity rule
# from their environment. The daemon attaches while they are mid-call; every tenant gets its
# embedding, retrieval and generation stages; a fault-free phase blames nothing but CPU
# contention; a 10% CPU quota written into one tenant's cgroup gives cpu_throttled verdicts for
# that tenant only.
source "$(dirname "$0")/lib.sh"
require_root
require_zerocode_agent  # sets PY and AGENT

# Two cgroups (v1 cpu controller, or v2), one agent each.
if [ -d /sys/fs/cgroup/cpu ] && ! [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  CG=/sys/fs/cgroup/cpu/tailcause-zc-$$
else
  CG=/sys/fs/cgroup/tailcause-zc-$$
fi
mkdir -p "$CG/a" "$CG/b"
# shellcheck disable=SC2016  # on_exit evals it when the test exits
on_exit 'rmdir "$CG/a" "$CG/b" "$CG" 2>/dev/null'

cat >"$WORK/daemon.yaml" <<YAML
probes:
  attrib:
    recipe_files: [$SRC_DIR/deploy/recipes/faiss.yaml, $SRC_DIR/deploy/recipes/pytorch.yaml]
    identity:
      - {from: env, env: AGENT_TENANT, tenant: 'zc-\$0', agent: 'rag-\${comm}'}
journal:
  path: ""
breaker:
  socket: ""
  state_file: ""
YAML

start_agent() {  # NAME CGROUP: runs until killed, in CGROUP from its first instruction
  sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CG/$2" \
    env AGENT_TENANT="$1" "$PY" "$AGENT" --seconds 600 >"$WORK/agent-$1.out" 2>&1 &
}
start_agent alpha a
A_PID=$!
on_exit 'stop_pid A_PID KILL'
start_agent beta b
B_PID=$!
on_exit 'stop_pid B_PID KILL'
# Both serving (in torch or faiss calls) before the daemon attaches.
both_serving() {
  [ "$(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$A_PID/status 2>/dev/null || echo 0)" -gt 0 ] &&
    grep -q _swigfaiss /proc/$A_PID/maps 2>/dev/null && grep -q _swigfaiss /proc/$B_PID/maps 2>/dev/null
}
wait_until 60 "both agents to serve" both_serving || true
grep -q _swigfaiss /proc/$A_PID/maps || fail "agent alpha did not load faiss: $(cat "$WORK/agent-alpha.out")"
sleep 1

start_daemon --config "$WORK/daemon.yaml"
stage_time() {  # TENANT STAGE [COMPONENT]: seconds summed over components (or one)
  scrape | awk -v t="zc-$1" -v s="$2" -v c="${3:-}" '
    /^tailcause_stage_time_seconds_total\{/ && index($0, "tenant=\"" t "\"") &&
      (s == "" || index($0, "stage=\"" s "\"")) &&
      (c == "" || index($0, "component=\"" c "\"")) { sum += $2 }
    END { printf "%.6f\n", sum + 0 }'
}
all_stages() {  # embedding, retrieval and generation time for both tenants
  local t s
  for t in alpha beta; do
    for s in embedding retrieval generation; do
      awk -v v="$(stage_time $t $s)" 'BEGIN { exit !(v > 0) }' || return 1
    done
  done
}
wait_until 90 "the stages of both tenants" all_stages || fail "no embedding/retrieval/generation stages for both tenants: $(scrape | grep -E '^tailcause_(stage_time|recipe)' | head -40)"
scrape | grep 'tenant="zc-alpha",agent="rag-python3"' >/dev/null ||
  fail "agent not named by the rule: $(scrape | grep -m3 zc-alpha)"
pass "attached mid-call: stages per tenant named by the identity rule (zc-alpha, zc-beta)"

# The recipes' status: FAISS found in Debian's _swigfaiss module, PyTorch in libtorch_cpu.
status=$(scrape | grep '^tailcause_recipe_status')
echo "$status" | grep -q 'library="_swigfaiss\*.so",symbol="_ZNK5faiss9IndexFlat6search[^"]*",state="attached"' ||
  fail "faiss recipe not attached in _swigfaiss: $status"
echo "$status" | grep -q 'symbol="_ZN2at4_ops30_transformer_encoder_layer_fwd[^"]*",state="attached"' ||
  fail "fused encoder layer recipe not attached: $status"
spans=$(scrape | awk '/^tailcause_recipe_spans_total\{library="_swigfaiss/ { s += $2 } END { print s + 0 }')
[ "$spans" -gt 0 ] || fail "no spans counted for the faiss recipes"
pass "recipe status: faiss attached in _swigfaiss*.so ($spans spans), torch's fused layer attached"

# `probes` while the agents run: recipes and their states, exit 1 for a symbol the library lacks.
cat >"$WORK/probes.yaml" <<YAML
probes:
  attrib:
    recipe_files: [$SRC_DIR/deploy/recipes/faiss.yaml]
    recipes:
      - {library: _swigfaiss*.so, symbol: no_such_symbol_zc, stage: tool}
YAML
rc=0
"$TAILCAUSE" probes --json --config "$WORK/probes.yaml" >"$WORK/probes.json" 2>"$WORK/probes.err" || rc=$?
[ "$rc" -eq 1 ] || fail "probes with an unresolvable symbol exited $rc: $(tail -3 "$WORK/probes.err")"
"$PY" - "$WORK/probes.json" <<'PYCHECK' || fail "probes --json recipes: $(cat "$WORK/probes.json")"
import json, sys
rs = json.load(open(sys.argv[1]))["recipes"]
def find(lib, sym):
    return next(x for x in rs if x["library"] == lib and x["symbol"].startswith(sym))
flat = find("_swigfaiss*.so", "_ZNK5faiss9IndexFlat6search")
assert flat["state"] == "attached" and flat["attached_files"] == 1, flat
assert len(flat["files"]) == 1 and "_swigfaiss" in flat["files"][0], flat
unmapped = find("libfaiss*.so*", "_ZNK5faiss9IndexFlat6search")
assert unmapped["state"] == "library_unmapped" and unmapped["files"] == [], unmapped
assert "no running process maps" in unmapped["why"], unmapped
assert find("_swigfaiss*.so", "no_such_symbol_zc")["state"] == "symbol_missing"
PYCHECK
grep -q "no_such_symbol_zc" "$WORK/probes.err" || fail "no log line names the missing symbol"
pass "probes --json: faiss attached in _swigfaiss (named), the missing symbol reported, exit 1"

# Fault-free: no glitch but what other processes' CPU load brings (the machine is shared).
sleep 6
blamed=$(scrape | awk '/^tailcause_glitches_total\{/ && index($0, "tenant=\"zc-") &&
  !index($0, "cause=\"runqueue\"") && !index($0, "cause=\"on_cpu\"") && $2 > 0')
[ -z "$blamed" ] || fail "fault-free run blamed: $blamed"
pass "fault-free: no glitch blamed on anything but CPU contention"

# 10% CPU quota on alpha's cgroup, from outside.
if [ -e "$CG/a/cpu.cfs_quota_us" ]; then echo 10000 >"$CG/a/cpu.cfs_quota_us"; else echo "10000 100000" >"$CG/a/cpu.max"; fi
throttled_glitches() {
  scrape | awk -v t="zc-$1" '/^tailcause_glitches_total\{/ && index($0, "tenant=\"" t "\"") &&
    index($0, "cause=\"cpu_throttled\"") { s += $2 } END { print s + 0 }'
}
alpha_throttled() { [ "$(throttled_glitches alpha)" -ge 3 ]; }
wait_until 45 "3 cpu_throttled glitches of alpha" alpha_throttled || true
sleep 3
[ "$(throttled_glitches alpha)" -ge 3 ] || fail "no cpu_throttled glitches for alpha: $(scrape | grep '^tailcause_glitches_total')"
[ "$(throttled_glitches beta)" -eq 0 ] || fail "beta blamed on throttling: $(scrape | grep '^tailcause_glitches_total')"
thr=$(awk -v a="$(stage_time alpha '' cpu_throttled)" 'BEGIN { print a }')
awk -v a="$thr" 'BEGIN { exit !(a > 0.5) }' || fail "alpha's stages throttled only $thr s"
awk -v b="$(stage_time beta '' cpu_throttled)" 'BEGIN { exit !(b < 0.05) }' || fail "beta throttled"
pass "10% quota on alpha: $(throttled_glitches alpha) cpu_throttled glitches, ${thr} s throttled; beta none"
if [ -e "$CG/a/cpu.cfs_quota_us" ]; then echo -1 >"$CG/a/cpu.cfs_quota_us"; else echo "max 100000" >"$CG/a/cpu.max"; fi
