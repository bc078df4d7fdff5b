# SPDX-License-Identifier: Apache-2.0
"""The agent's added cost under `tailcause instrument`, measured inside one process: blocks of
requests alternate between the agent's own functions and the instrumented ones (the hooks'
patched attributes swapped in and out), so the host's drift and each process's own speed (where
its memory landed, which core it ran on), which move separate runs by several percent, cancel.
Printed, never asserted (DESIGN.md section 6).

  /usr/bin/python3 tests/zerocode/bench_inprocess.py TOOL_URL [--blocks N] [--requests K]
                                                     [--wait-for-tracer | --daemon CMD]
                                                     [--pairs FILE]

--wait-for-tracer: first wait until a tracer (the daemon) has enabled the SDK's probes, so the
instrumented blocks pay the probes' traps and BPF programs too; without it they pay the
wrappers alone. Either way the daemon, when there is one, runs under both kinds of block.
--daemon CMD: the issue's comparison, instrumented with the daemon against neither, and the
daemon's presence alone in between: three kinds of block per round, in an order that rotates
per round: plain with no daemon; plain beside the daemon (its node-wide probes and its own
CPU, nothing of this process traced); instrumented with the daemon tracing it. CMD (the
daemon's command line) is started before a block that needs it, once it has enabled the probes,
and stopped before one that does not; either way the block waits SETTLE_S after the change, so
the start's and the stop's own kernel work (attaching, detaching, freeing maps) lands on no
block. Prints, against the plain blocks (bench_figures.py): throughput and the agent's CPU per
request with their 95% intervals, the typical round's wall-time ratio, and the daemon's own CPU
per request; then the instrumented agent's CPU plus the daemon's against the plain agent's.
--pairs FILE: each round's CPU and wall time per request (ms) of every kind of block, a JSON
line a round, appended, so that the rounds of several runs can be pooled by bench_figures.py.
"""
import argparse
import http.client
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import agent as zc  # noqa: E402  (tests/zerocode/agent.py: the untouched agent)
import bench_figures  # noqa: E402
import faiss  # noqa: E402
import torch  # noqa: E402

import tailcause  # noqa: E402
from harness import threads_cpu_ns  # noqa: E402  (bench/harness.py)
from tailcause import instrument  # noqa: E402

# What the hooks below patch: (owner, attribute).
PATCHED = [(torch.nn.Module, "__call__"), (urllib.request.OpenerDirector, "open"),
           (http.client.HTTPConnection, "request"), (http.client.HTTPConnection, "getresponse"),
           (faiss.IndexFlatL2, "search")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tool_url")
    p.add_argument("--blocks", type=int, default=30)
    p.add_argument("--requests", type=int, default=20, help="requests per block")
    p.add_argument("--wait-for-tracer", action="store_true")
    p.add_argument("--daemon", help="command line of the daemon to start and stop per block")
    p.add_argument("--pairs", help="append each round's per-request figures to this file (JSON "
                   "lines), so that several runs can be pooled")
    a = p.parse_args()
    if a.daemon and a.wait_for_tracer:
        p.error("--daemon starts its own tracer: no --wait-for-tracer")
    agent = zc.Agent(20000, 4, a.tool_url)
    plain = [getattr(owner, name) for owner, name in PATCHED]
    instrument.install(entry="handle_request", tenant_arg="tenant", agent="bench",
                       name="bench_inprocess")
    hooked = [getattr(owner, name) for owner, name in PATCHED]
    if hooked == plain:
        sys.exit("bench_inprocess: the hooks patched nothing")
    entries = {False: zc.handle_request, True: instrument.wrap_entry(zc.handle_request)}
    if a.wait_for_tracer:
        wait_for_probes(True)
    daemon = Daemon(a.daemon) if a.daemon else None
    # (name, instrumented, daemon running); the first is the plain one the others are read against
    arms = ([("plain", False, False), ("beside", False, True), ("instrumented", True, True)]
            if daemon else [("plain", False, False), ("instrumented", True, False)])
    daemon_cpu = {name: [0, 0] for name, _, _ in arms}  # the daemon's CPU (ns), requests

    def block(name, on, with_daemon):
        if daemon:
            daemon.start() if with_daemon else daemon.stop()
        for (owner, attr), fn in zip(PATCHED, hooked if on else plain):
            setattr(owner, attr, fn)
        handle = entries[on]
        daemon_start = daemon.cpu_ns() if with_daemon else 0
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(a.requests):
            handle(agent, "bench", f"question {i}")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if with_daemon:
            daemon_cpu[name][0] += daemon.cpu_ns() - daemon_start
            daemon_cpu[name][1] += a.requests
        return cpu * 1000 / a.requests, wall * 1000 / a.requests

    try:
        for arm in arms:  # warm every path
            block(*arm)
        for name in daemon_cpu:
            daemon_cpu[name] = [0, 0]
        rounds = []  # per round: {kind of block: [CPU ms, wall ms] per request}
        for n in range(a.blocks):
            ran = {arm[0]: block(*arm) for arm in arms[n % len(arms):] + arms[:n % len(arms)]}
            rounds.append({name: list(ran[name]) for name, _, _ in arms})
            if a.pairs:
                with open(a.pairs, "a") as f:
                    f.write(json.dumps(rounds[-1]) + "\n")
    finally:
        if daemon:
            daemon.stop()
    how = (" (the daemon started for the blocks beside it and instrumented, stopped for the plain"
           " ones)" if daemon else " (probes traced)" if a.wait_for_tracer else " (no tracer)")
    print(f"in one process, {a.blocks} rounds of {a.requests}-request blocks{how}: agent CPU per "
          f"request {statistics.median(r['plain'][0] for r in rounds):.3f} ms plain")
    for name, _, with_daemon in arms[1:]:
        own = (f"; the daemon's own CPU {daemon_cpu[name][0] / 1e6 / daemon_cpu[name][1]:.3f} ms"
               " per request" if with_daemon else "")
        print(f"  {bench_figures.describe(rounds, name)}{own}")
    if daemon:
        d = daemon_cpu["instrumented"][0] / 1e6 / daemon_cpu["instrumented"][1]
        plain, traced = (statistics.fmean(r[name][0] for r in rounds)
                         for name in ("plain", "instrumented"))
        print(f"  instrumented agent and daemon against the plain agent alone: "
              f"{(traced + d) / plain:.4f}")
    return 0


def wait_for_probes(enabled, timeout_s=60):
    """Until a tracer has enabled (or every tracer has left) the SDK's request and stage probes."""
    deadline = time.monotonic() + timeout_s
    while (tailcause.enabled("stage_begin") and tailcause.enabled("request_begin")) != enabled:
        if time.monotonic() > deadline:
            sys.exit(f"bench_inprocess: the probes were not {'enabled' if enabled else 'released'} "
                     f"within {timeout_s} s")
        time.sleep(0.05)


class Daemon:
    """The daemon, started and stopped between blocks (--daemon)."""

    SETTLE_S = 2.0  # after a start (the probes enabled) or a stop: its own kernel work is done

    def __init__(self, command):
        self.command = shlex.split(command)
        self.proc = None

    def start(self):
        if self.proc:
            return
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_for_probes(True)
        time.sleep(self.SETTLE_S)
        if self.proc.poll() is not None:
            sys.exit(f"bench_inprocess: the daemon exited ({self.proc.returncode})")

    def stop(self):
        if not self.proc:
            return
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.proc = None
        wait_for_probes(False)
        time.sleep(self.SETTLE_S)

    def cpu_ns(self):
        """The daemon's threads' time on CPU so far, in ns."""
        return threads_cpu_ns(self.proc.pid)


if __name__ == "__main__":
    sys.exit(main())
