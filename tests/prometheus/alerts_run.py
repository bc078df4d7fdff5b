#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One phase of tests/e2e/test_prometheus_alerts.sh: runs the example agent while a real
Prometheus (scraping the daemon every second, evaluating the shipped rules) is polled.

  alerts_run.py --prom URL --expect FILE --out FILE [--exprs FILE [--exprs-after S]] -- AGENT ARGS...

--expect: JSON list of {"name", "alert", "labels": {label: regex}}; the phase ends (the agent gets
SIGTERM) as soon as every expected alert is firing and the expressions were evaluated, or when
the agent exits. --exprs: JSON lines {"source", "expr", "kind"} (tests/prometheus/check_exprs.py
--list), each evaluated through /api/v1/query once every expected alert fired and --exprs-after
seconds passed (or 60 s in; without expected alerts, 12 s into the run); --out gets {"fired": {name: seconds from the agent's start},
"firing_seen": [every alert seen firing, with its labels and first second], "empty": [...]}.
"""
import argparse
import json
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def get(prom, path, **params):
    url = f"{prom}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def matches(alert, want):
    if alert["labels"].get("alertname") != want["alert"]:
        return False
    return all(re.fullmatch(rx, alert["labels"].get(k, "")) for k, rx in want["labels"].items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--exprs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-seconds", type=float, default=60)
    ap.add_argument("--exprs-after", type=float, default=0,
                    help="evaluate the expressions no sooner than this (series that need time)")
    ap.add_argument("agent", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    agent_cmd = a.agent[1:] if a.agent and a.agent[0] == "--" else a.agent
    expect = json.load(open(a.expect))
    exprs = [json.loads(line) for line in open(a.exprs)] if a.exprs else []

    log = open(a.out + ".agent.log", "w")
    t0 = time.time()
    agent = subprocess.Popen(agent_cmd, stdout=log, stderr=subprocess.STDOUT)
    fired, seen, empty, evaluated = {}, {}, None, not exprs
    tenant_start = {}  # when Prometheus first saw each tenant's requests
    try:
        while agent.poll() is None and time.time() - t0 < a.max_seconds:
            now = time.time() - t0
            for r in get(a.prom, "/api/v1/query", query="count by (tenant) "
                         "(tailcause_requests_total)")["result"]:
                tenant_start.setdefault(r["metric"]["tenant"], round(now, 1))
            for al in get(a.prom, "/api/v1/alerts")["alerts"]:
                if al["state"] != "firing":
                    continue
                key = json.dumps(al["labels"], sort_keys=True)
                seen.setdefault(key, round(now, 1))
                for w in expect:
                    if w["name"] not in fired and matches(al, w):
                        fired[w["name"]] = round(now, 1)
                        print(f"  {now:5.1f} s: {w['alert']} firing for {w['name']}", flush=True)
            all_fired = len(fired) == len(expect)
            if not evaluated and (all_fired and expect and now >= a.exprs_after or
                                  now >= (60 if expect else 12)):
                empty = []
                for e in exprs:
                    if e["kind"] == "alert":
                        continue  # alerts are judged by firing, above
                    if not get(a.prom, "/api/v1/query", query=e["expr"])["result"]:
                        empty.append(e["source"])
                evaluated = True
                print(f"  {time.time() - t0:5.1f} s: {len(exprs)} expressions evaluated, "
                      f"{len(empty)} empty", flush=True)
            if all_fired and evaluated and expect:
                break
            time.sleep(0.5)
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
    out = {"seconds": round(time.time() - t0, 1), "agent_rc": agent.returncode, "fired": fired,
           "firing_seen": [{"labels": json.loads(k), "at": v} for k, v in seen.items()],
           "empty": empty, "tenant_start": tenant_start}
    json.dump(out, open(a.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
