#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tailcause probes` reports the kernel features and every family, as text and as JSON.
source "$(dirname "$0")/lib.sh"
require_root
"$TAILCAUSE" probes --config "$SRC_DIR/deploy/tailcause.yaml" --json >"$WORK/p.json" || fail "probes --json failed: $(cat "$WORK/p.json")"
/usr/bin/python3 - "$WORK/p.json" <<'PY' || fail "probes --json content"
import json, sys
d = json.load(open(sys.argv[1]))
fams = {f["name"]: f for f in d["families"]}
assert set(fams) == {"sched", "throttle", "tcp", "memory", "block", "attrib"}, fams
assert all(f["attached"] for f in fams.values()), fams
feats = {f["name"]: f for f in d["features"]}
for name in ("btf", "tp_btf", "raw_tracepoint", "ringbuf", "kprobe", "fentry"):
    assert name in feats, name
assert feats["btf"]["available"] and feats["ringbuf"]["available"]
PY
pass "probes --json lists features and six attached families"
"$TAILCAUSE" probes >"$WORK/p.txt" || fail "probes failed"
{ grep -q "^Kernel features" "$WORK/p.txt" && grep -qE "^  sched +attached" "$WORK/p.txt"; } || fail "probes text: $(cat "$WORK/p.txt")"
printf 'probes:\n  memory:\n    enabled: false\n' >"$WORK/c.yaml"
"$TAILCAUSE" probes --config "$WORK/c.yaml" | grep -qE "^  memory +disabled" || fail "disabled family not shown"
pass "probes text output"
