#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shipped rules and dashboards, offline (no root, no daemon): they are what
# deploy/prometheus/generate.py makes from thresholds.yaml; promtool accepts the rules and its
# unit tests (deploy/prometheus/tests) see every alert fire on its fault series and stay silent on
# healthy ones; every dashboard is valid against Grafana's own dashboard schema; every
# expression (rules and panels) parses and names only metrics the daemon exports
# (src/core/record/schema.h). ctest: prometheus_rules (label prometheus).
set -euo pipefail
SRC_DIR=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$SRC_DIR"
command -v promtool >/dev/null || { echo "FAIL: promtool missing (scripts/install-deps.sh test)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/tailcause-rules.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

/usr/bin/python3 deploy/prometheus/generate.py --check
echo "ok: rules and dashboards are what generate.py makes from thresholds.yaml"
promtool check rules deploy/prometheus/rules/*.yaml
promtool test rules deploy/prometheus/tests/*.yaml
echo "ok: promtool unit tests"
/usr/bin/python3 tests/prometheus/check_exprs.py --rules-out "$WORK/all_exprs.rules.yaml"
promtool check rules "$WORK/all_exprs.rules.yaml" >/dev/null
echo "ok: every rule and panel expression parses (promtool)"

# Grafana's dashboard schema (@grafana/schema's Dashboard type, checked by the TypeScript
# compiler), installed as package-lock.json pins it; a deliberately broken copy must fail.
dir=tests/prometheus/grafana_schema
{ command -v node >/dev/null && command -v npm >/dev/null; } ||
  { echo "FAIL: node and npm are needed (scripts/install-deps.sh test installs them)" >&2; exit 1; }
stamp="$dir/node_modules/.tailcause-lock"
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) $(node --version)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) >"$WORK/npm.log" 2>&1 ||
    { cat "$WORK/npm.log" >&2; echo "FAIL: npm ci in $dir" >&2; exit 1; }
  echo "$want" >"$stamp"
fi
node "$dir/check.mjs" "$WORK/ts" deploy/grafana/dashboards/*.json
/usr/bin/python3 - deploy/grafana/dashboards/tailcause-overview.json "$WORK/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["panels"][1]["gridPos"]["w"] = "12"  # a string where the schema wants a number
d["panels"][2]["titel"] = d["panels"][2].pop("title")  # a misspelt key
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
if node "$dir/check.mjs" "$WORK/ts-broken" "$WORK/broken.json" >"$WORK/broken.txt" 2>&1; then
  echo "FAIL: a broken dashboard passed the schema check" >&2; exit 1
fi
{ grep -q "not assignable to type 'number'" "$WORK/broken.txt" && grep -q "titel" "$WORK/broken.txt"; } ||
  { cat "$WORK/broken.txt" >&2; echo "FAIL: the schema check missed a broken field" >&2; exit 1; }
echo "ok: every dashboard matches Grafana's dashboard schema (and a broken one does not)"
