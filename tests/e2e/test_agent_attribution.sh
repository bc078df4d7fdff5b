#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon attributes the example agent's stages to kernel causes, per tenant, through the
# SDK's USDT probes (auto-discovered, no configuration): a tenant under a 10% CPU quota has
# cpu_throttled as its generation stage's largest component while the other tenant does not;
# a slow tool server makes network the tool stage's largest component; a dropped page cache
# shows as block_io and page-cache misses in the affected tenant's retrieval stage only.
source "$(dirname "$0")/lib.sh"
require_root
AGENT="$BUILD_DIR/examples/rag-agent"
[ -x "$AGENT" ] || fail "no $AGENT"

start_daemon
# breakdown TENANT STAGE: "component seconds" lines from the daemon, largest first.
breakdown() {
  scrape | /usr/bin/python3 -c '
import re, sys
tenant, stage = sys.argv[1], sys.argv[2]
rows = {}
for line in sys.stdin:
    m = re.match(r"tailcause_stage_time_seconds_total\{(.*)\} (\S+)$", line)
    if not m: continue
    labels = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(1)))
    if labels.get("tenant") == tenant and labels.get("stage") == stage:
        rows[labels["component"]] = rows.get(labels["component"], 0) + float(m.group(2))
for c, v in sorted(rows.items(), key=lambda kv: -kv[1]):
    print(c, v)' "$1" "$2"
}
stage_value() {  # stage_value METRIC TENANT STAGE -> summed value over agents
  scrape | /usr/bin/python3 -c '
import re, sys
name, tenant, stage = sys.argv[1:4]
total = 0.0
for line in sys.stdin:
    m = re.match(re.escape(name) + r"\{(.*)\} (\S+)$", line)
    if not m: continue
    labels = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(1)))
    if labels.get("tenant") == tenant and labels.get("stage") == stage:
        total += float(m.group(2))
print(total)' "$1" "$2" "$3"
}

"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration 8 --fault quota:ta --fault slow-peer:tb \
  --report "$WORK/report1.json" >"$WORK/agent1.log" 2>&1 || fail "agent run 1: $(tail -5 "$WORK/agent1.log")"
grep -q "attrib: attached .* probe(s) in .*rag-agent" "$WORK/daemon.log" || fail "the agent's probes were not auto-attached"
pass "agent's USDT probes discovered and attached without configuration"

breakdown ta generation >"$WORK/ta_gen.txt"
breakdown tb generation >"$WORK/tb_gen.txt"
{ [ -s "$WORK/ta_gen.txt" ] && [ -s "$WORK/tb_gen.txt" ]; } || fail "no generation breakdown: $(scrape | grep -c tailcause_stage_time)"
[ "$(head -1 "$WORK/ta_gen.txt" | cut -d' ' -f1)" = "cpu_throttled" ] || fail "ta generation: $(tr '\n' ' ' <"$WORK/ta_gen.txt")"
[ "$(head -1 "$WORK/tb_gen.txt" | cut -d' ' -f1)" != "cpu_throttled" ] || fail "tb generation: $(tr '\n' ' ' <"$WORK/tb_gen.txt")"
pass "quota on ta: ta generation led by $(head -1 "$WORK/ta_gen.txt"), tb by $(head -1 "$WORK/tb_gen.txt")"

breakdown tb tool >"$WORK/tb_tool.txt"
[ "$(head -1 "$WORK/tb_tool.txt" | cut -d' ' -f1)" = "network" ] || fail "tb tool: $(tr '\n' ' ' <"$WORK/tb_tool.txt")"
pass "slow peer for tb: tb tool stage led by $(head -1 "$WORK/tb_tool.txt")"

# Components add up to the stage's wall time (the daemon exports both).
/usr/bin/python3 - "$PORT" <<'PY' || fail "components do not add up to wall time"
import re, sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode()
parts, walls = {}, {}
for line in text.splitlines():
    m = re.match(r"(tailcause_stage_time_seconds_total|tailcause_stage_duration_seconds_sum)\{(.*)\} (\S+)$", line)
    if not m: continue
    l = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(2)))
    key = (l["tenant"], l["agent"], l["stage"])
    if m.group(1).startswith("tailcause_stage_time"):
        parts[key] = parts.get(key, 0) + float(m.group(3))
    else:
        walls[key] = float(m.group(3))
assert walls, "no stages"
for key, wall in walls.items():
    # Helper threads' time is tailcause_stage_helper_seconds, apart: the stage's own
    # components add up to its wall time.
    assert abs(parts.get(key, 0) - wall) <= wall * 0.02, (key, parts.get(key), wall)
print("ok:", len(walls), "stages: components add up to wall time")
PY
pass "components add up to every stage's wall time (within 2%)"

# Counters since the daemon started: compare what this run added (the first run's fresh
# processes read their indexes cold too, and would sit on any ratio between the tenants).
retrieval_io() { breakdown "$1" retrieval | awk '$1 == "block_io" { print $2 }'; }
misses_a0=$(stage_value tailcause_stage_page_cache_misses_total ta retrieval)
misses_b0=$(stage_value tailcause_stage_page_cache_misses_total tb retrieval)
io_a0=$(retrieval_io ta) io_b0=$(retrieval_io tb)
"$AGENT" --tenants ta,tb --rate 6 --concurrency 2 --duration 6 --fault cold-cache:ta \
  --report "$WORK/report2.json" >"$WORK/agent2.log" 2>&1 || fail "agent run 2: $(tail -5 "$WORK/agent2.log")"
misses_a=$(stage_value tailcause_stage_page_cache_misses_total ta retrieval)
misses_b=$(stage_value tailcause_stage_page_cache_misses_total tb retrieval)
io_a=$(retrieval_io ta) io_b=$(retrieval_io tb)
read -r dm_a dm_b dio_a dio_b < <(/usr/bin/python3 -c 'import sys; v=[float(x or 0) for x in sys.argv[1:]]; print(v[0]-v[1], v[2]-v[3], v[4]-v[5], v[6]-v[7])' \
  "$misses_a" "$misses_a0" "$misses_b" "$misses_b0" "$io_a" "$io_a0" "$io_b" "$io_b0")
/usr/bin/python3 -c "import sys; a,b,ia,ib=map(float,sys.argv[1:]); sys.exit(0 if a > 100 and a > 10*max(b,1) and ia > 5*max(ib,1e-3) else 1)" \
  "$dm_a" "$dm_b" "$dio_a" "$dio_b" || fail "cold cache (this run): misses ta=$dm_a tb=$dm_b block_io ta=${dio_a}s tb=${dio_b}s"
pass "cold cache on ta (this run): retrieval page-cache misses ta=$dm_a tb=$dm_b, block_io ta=${dio_a}s tb=${dio_b}s"
