#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every PromQL expression tailcause ships: the rules' (recording and alerting) and every
dashboard panel's and template variable's, with Grafana's variables filled in.

  check_exprs.py [--rules-out FILE]        checks that each names only metrics the daemon
                                           exports (src/core/record/schema.h) or the rules record; with
                                           --rules-out writes them all as recording rules, for
                                           `promtool check rules` to parse
  check_exprs.py --list [--rate-interval 10s] [--rules R] [--dashboards DIR]
                                           prints them as JSON lines {"source", "expr"} (the e2e
                                           test evaluates each against a real Prometheus)
"""
import argparse
import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def exprs(rules_path, dash_dir, rate_interval):
    out = []
    with open(rules_path) as f:
        for g in yaml.safe_load(f)["groups"]:
            for r in g["rules"]:
                out.append({"source": f"rule {r.get('record') or r.get('alert')}",
                            "expr": r["expr"], "kind": "record" if "record" in r else "alert"})
    subst = {"$__rate_interval": rate_interval, "$__interval": rate_interval,
             "$__range": "5m"}
    for path in sorted(glob.glob(os.path.join(dash_dir, "*.json"))):
        with open(path) as f:
            board = json.load(f)
        names = {v["name"] for v in board["templating"]["list"]}

        def fill(e):
            for k, v in subst.items():
                e = e.replace(k, v)
            for n in names:
                e = e.replace("$" + n, ".*")
            if "$" in e.replace("$1", ""):
                sys.exit(f"{path}: unknown variable in {e}")
            return e

        def panels(ps):
            for p in ps:
                yield p
                yield from panels(p.get("panels", []))

        for p in panels(board["panels"]):
            for t in p.get("targets", []):
                out.append({"source": f"{os.path.basename(path)}: {p['title']} ({t['refId']})",
                            "expr": fill(t["expr"]), "kind": "panel",
                            "exemplar": t.get("exemplar", False)})
        for v in board["templating"]["list"]:
            q = v.get("query")
            if isinstance(q, dict):
                m = re.fullmatch(r"label_values\((.*), *\w+\)", q["query"])
                e = m.group(1) if m else q["query"]
                out.append({"source": f"{os.path.basename(path)}: variable {v['name']}",
                            "expr": fill(e), "kind": "variable"})
    return out


def exported():
    with open(os.path.join(ROOT, "src", "core", "record", "schema.h")) as f:
        return set(re.findall(r'"(tailcause_[a-z0-9_]+)"', f.read()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", default=os.path.join(ROOT, "deploy/prometheus/rules/tailcause.rules.yaml"))
    ap.add_argument("--dashboards", default=os.path.join(ROOT, "deploy/grafana/dashboards"))
    ap.add_argument("--rate-interval", default="1m")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--rules-out")
    a = ap.parse_args()
    all_exprs = exprs(a.rules, a.dashboards, a.rate_interval)
    if a.list:
        for e in all_exprs:
            print(json.dumps(e))
        return 0
    known = exported()
    with open(a.rules) as f:
        recorded = {r["record"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]
                    if "record" in r}
    bad = []
    for e in all_exprs:
        # Metric names: identifiers not followed by '(' (functions) nor inside quotes.
        text = re.sub(r'"[^"]*"', '""', e["expr"])
        for name in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*[{\[)\s]|$)", text):
            if ":" in name:
                if name not in recorded:
                    bad.append(f"{e['source']}: {name} is no recording rule")
            elif name.startswith("tailcause_"):
                base = name
                for s in SUFFIXES:
                    if base.endswith(s) and base[: -len(s)] in known:
                        base = base[: -len(s)]
                        break
                if base not in known:
                    bad.append(f"{e['source']}: {name} is not exported (src/core/record/schema.h)")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    print(f"ok: {len(all_exprs)} expressions name only exported metrics and recorded rules")
    if a.rules_out:
        rules = [{"record": f"check:expr_{i}", "expr": e["expr"]} for i, e in enumerate(all_exprs)]
        with open(a.rules_out, "w") as f:
            yaml.safe_dump({"groups": [{"name": "every-shipped-expression", "rules": rules}]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
