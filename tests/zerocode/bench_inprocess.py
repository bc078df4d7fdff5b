# SPDX-License-Identifier: Apache-2.0
"""The agent's added cost under `tailcause instrument`, measured inside one process: blocks of
requests alternate between the agent's own functions and the instrumented ones (the hooks'
patched attributes swapped in and out), so the host's drift and each process's own speed (where
its memory landed, which core it ran on), which move separate runs by several percent, cancel.
Printed, never asserted (DESIGN.md section 6).

  /usr/bin/python3 tests/zerocode/bench_inprocess.py TOOL_URL [--blocks N] [--requests K]
                                                     [--wait-for-tracer]

--wait-for-tracer: first wait until a tracer (the daemon) has enabled the SDK's probes, so the
instrumented blocks pay the probes' traps and BPF programs too; without it they pay the
wrappers alone. Prints the agent's CPU per request both ways and the median of the per-pair
ratios.
"""
import argparse
import http.client
import os
import statistics
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python"))

import agent as zc  # noqa: E402  (tests/zerocode/agent.py: the untouched agent)
import faiss  # noqa: E402
import torch  # noqa: E402

import tailcause  # noqa: E402
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
    a = p.parse_args()
    agent = zc.Agent(20000, 4, a.tool_url)
    plain = [getattr(owner, name) for owner, name in PATCHED]
    instrument.install(entry="handle_request", tenant_arg="tenant", agent="bench",
                       name="bench_inprocess")
    hooked = [getattr(owner, name) for owner, name in PATCHED]
    if hooked == plain:
        sys.exit("bench_inprocess: the hooks patched nothing")
    entries = {False: zc.handle_request, True: instrument.wrap_entry(zc.handle_request)}
    if a.wait_for_tracer:
        deadline = time.monotonic() + 60
        while not (tailcause.enabled("stage_begin") and tailcause.enabled("request_begin")):
            if time.monotonic() > deadline:
                sys.exit("bench_inprocess: no tracer enabled the probes within 60 s")
            time.sleep(0.05)

    def block(on):
        for (owner, name), fn in zip(PATCHED, hooked if on else plain):
            setattr(owner, name, fn)
        handle = entries[on]
        start = time.process_time()
        for i in range(a.requests):
            handle(agent, "bench", f"question {i}")
        return (time.process_time() - start) * 1000 / a.requests

    block(True), block(False)  # warm both paths
    cpu = {False: [], True: []}
    for n in range(a.blocks):
        for on in ((False, True) if n % 2 else (True, False)):
            cpu[on].append(block(on))
    m = statistics.median
    ratios = [on / off for off, on in zip(cpu[False], cpu[True])]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    print(f"in one process, {a.blocks} pairs of {a.requests}-request blocks"
          f"{' (probes traced)' if a.wait_for_tracer else ' (no tracer)'}: agent CPU per request "
          f"{m(cpu[False]):.3f} ms plain, {m(cpu[True]):.3f} ms instrumented; per-pair ratio "
          f"median {m(ratios):.4f} ({(m(ratios) - 1) * 100:+.1f}%), quartiles {q1:.4f}..{q3:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
