#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""tailcause example agent in Python: the C++ rag-agent's request pipeline on the Python SDK.

One process per tenant (forked), an open-loop request generator and worker threads in each; per
request the stages prompt (tokenising), embedding (a numpy MLP), retrieval (IVF search over an
index file read with os.pread, a small LRU cache in front, half the lists scanned on a helper
thread that attaches to the request), generation (a token loop of matrix-vector products and a
softmax), tool (HTTP GET to a tool server on loopback, a child process) and response.

Debian's python3 + python3-numpy only. Faults: cold-cache, slow-peer, lock (the CPU faults quota
and hog need the C++ agent, which puts every tenant in a cgroup of its own). Run with --help.
"""

import argparse
import http.server
import json
import os
import re
import select
import signal
import sys
import threading
import time
import traceback
import urllib.parse
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "sdk", "python"))

STAGES = ("prompt", "embedding", "retrieval", "generation", "tool", "response")


def load_sdk():
    """Imports numpy, the SDK and the agent's modules (after the flags, so --help needs none)."""
    global tailcause, ensure_index, AGENT, run_tenant
    try:
        import numpy  # noqa: F401  (imported here for a clear message when missing)
        import tailcause
        from rag_index import ensure_index
        from rag_tenant import AGENT, run_tenant
    except (ImportError, OSError, AttributeError) as err:  # no numpy, no library, a stale library
        sys.exit(f"rag_agent.py: {err}; needs Debian's python3-numpy and the tailcause SDK library "
                 "(build the tailcause_sdk target, or point TAILCAUSE_SDK_LIB at libtailcause_sdk.so)")


FAULT_KINDS = ("quota", "hog", "cold-cache", "slow-peer", "lock")
SUPPORTED_FAULTS = ("cold-cache", "slow-peer", "lock")


class UsageError(Exception):
    pass


# ---- flags ----------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", default="a,b", help="comma-separated tenant names (default a,b)")
    p.add_argument("--rate", type=float, default=2.0, help="requests/s per tenant, open loop")
    p.add_argument("--concurrency", type=int, default=2, help="worker threads per tenant")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of load")
    p.add_argument("--data-dir", default=os.path.join(REPO, "build", "examples", "data"),
                   help="where pyindex-<tenant>.f32 files live")
    p.add_argument("--vectors", type=int, default=20000, help="vectors per tenant index")
    p.add_argument("--dim", type=int, default=64, help="vector dimension")
    p.add_argument("--fault", action="append", default=[], metavar="KIND[:TENANT]",
                   help="repeatable; KIND: " + ", ".join(SUPPORTED_FAULTS))
    p.add_argument("--report", help="write a JSON summary here at the end")
    args = p.parse_args(argv)
    try:
        validate(args)
    except UsageError as err:
        print(f"rag_agent.py: {err}", file=sys.stderr)
        sys.exit(2)
    return args


def validate(args):
    args.tenants = args.tenants.split(",")
    for t in args.tenants:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", t):
            raise UsageError(f"--tenants: bad tenant name {t!r} (letters, digits, '-', '_'; at most 32)")
    if len(set(args.tenants)) != len(args.tenants):
        raise UsageError("--tenants: a tenant is given twice")
    if not 0 < args.rate <= 10000:
        raise UsageError(f"--rate must be in (0, 10000], got {args.rate}")
    if not 1 <= args.concurrency <= 64:
        raise UsageError(f"--concurrency must be in [1, 64], got {args.concurrency}")
    if not 0 < args.duration <= 86400:
        raise UsageError(f"--duration must be in (0, 86400] seconds, got {args.duration}")
    if not 1000 <= args.vectors <= 5_000_000:
        raise UsageError(f"--vectors must be in [1000, 5000000], got {args.vectors}")
    if not 8 <= args.dim <= 1024:
        raise UsageError(f"--dim must be in [8, 1024], got {args.dim}")
    faults = set()
    for spec in args.fault:
        kind, _, tenant = spec.partition(":")
        tenant = tenant or args.tenants[0]
        if kind not in FAULT_KINDS:
            raise UsageError(f"--fault {spec}: unknown fault kind {kind!r} "
                             f"(expected {', '.join(SUPPORTED_FAULTS)})")
        if kind not in SUPPORTED_FAULTS:
            raise UsageError(f"--fault {spec}: {kind} needs per-tenant cgroups; use the C++ agent "
                             "(build/examples/rag-agent)")
        if tenant not in args.tenants:
            raise UsageError(f"--fault {spec}: tenant {tenant!r} is not one of --tenants "
                             f"{','.join(args.tenants)}")
        faults.add((kind, tenant))
    args.faults = sorted(faults)


class ToolHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        if url.path != "/tool" or "q" not in params:
            self.send_error(404 if url.path != "/tool" else 400)
            return
        delay = min(max(int(params.get("delay_ms", "0") or 0), 0), 10000)
        time.sleep(delay / 1000)
        h = zlib.crc32(f"{params.get('tenant')}:{params['q']}".encode())
        body = json.dumps({"tool": "kb-lookup", "tenant": params.get("tenant"),
                           "words": len(params["q"].split()), "record": f"KB-{h % 1000000:06}",
                           "delay_ms": delay}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def fork_child(body):
    """Forks; the child runs body() and exits. SIGINT is the parent's to handle."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = body() or 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def start_tool_server():
    r, w = os.pipe()

    def serve():
        os.close(r)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ToolHandler)
        os.write(w, str(server.server_address[1]).encode())
        os.close(w)
        server.serve_forever()

    pid = fork_child(serve)
    os.close(w)
    port = int(os.read(r, 16) or b"0")
    os.close(r)
    if not port:
        raise RuntimeError("the tool server did not start")
    return pid, port


def print_summary(report):
    print(f"\n{'tenant':<12} {'stage':<11} {'count':>8} {'errors':>7} {'p50 ms':>10} {'p99 ms':>10}")
    for name, t in report["tenants"].items():
        if "error" in t:
            print(f"{name:<12} error: {t['error']}")
            continue
        for stage in STAGES + ("queue", "request"):
            s = t["stages"].get(stage)
            if s:
                print(f"{name:<12} {stage:<11} {s['count']:>8} {s['errors']:>7} "
                      f"{1e3 * s['p50_seconds']:>10.2f} {1e3 * s['p99_seconds']:>10.2f}")
    for name, t in report["tenants"].items():
        if "error" not in t:
            r = t["requests"]
            print(f"tenant {name}: {r['offered']} offered, {r['completed']} completed, {r['failed']} failed, "
                  f"{r['abandoned']} abandoned; {1e3 * t['cpu_seconds_per_request']:.1f} ms CPU per request")
    sys.stdout.flush()


def collect_results(workers, stop_requests):
    """Reads every tenant's JSON result; the first SIGINT/SIGTERM is forwarded as SIGTERM (the
    tenants stop early and still report)."""
    chunks = {name: [] for name in workers}
    open_fds = {r: name for name, (_, r) in workers.items()}
    forwarded = False
    while open_fds:
        if stop_requests and not forwarded:
            forwarded = True
            for pid, _ in workers.values():
                os.kill(pid, signal.SIGTERM)
        readable, _, _ = select.select(list(open_fds), [], [], 0.2)
        for r in readable:
            chunk = os.read(r, 65536)
            if chunk:
                chunks[open_fds[r]].append(chunk)
            else:
                os.close(r)
                del open_fds[r]
    results = {}
    for name, (pid, _) in workers.items():
        os.waitpid(pid, 0)
        try:
            results[name] = json.loads(b"".join(chunks[name]) or b"null") or {"error": "no result"}
        except ValueError:
            results[name] = {"error": "unreadable result"}
    return results


def main(argv):
    args = parse_args(argv)
    load_sdk()
    os.makedirs(args.data_dir, exist_ok=True)
    for name in args.tenants:
        path = os.path.join(args.data_dir, f"pyindex-{name}.f32")
        if ensure_index(path, args.vectors, args.dim, seed=sum(map(ord, name)) * 1000003 + args.vectors):
            print(f"generated {path} ({args.vectors} vectors x {args.dim})", file=sys.stderr)
    stop_requests = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requests.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop_requests.append(1))
    tool_pid, tool_port = start_tool_server()
    workers = {}
    try:
        for name in args.tenants:
            r, w = os.pipe()

            def body(name=name, r=r, w=w):
                os.close(r)
                stop = threading.Event()
                signal.signal(signal.SIGTERM, lambda *_: stop.set())
                try:
                    result = run_tenant(args, name, tool_port, stop)
                except Exception as err:  # reported, not raised: the parent prints it
                    result = {"tenant": name, "error": f"{type(err).__name__}: {err}"}
                with os.fdopen(w, "w") as out:
                    json.dump(result, out)
                return 0 if "error" not in result else 1

            workers[name] = (fork_child(body), r)
            os.close(w)
        results = collect_results(workers, stop_requests)
    finally:
        os.kill(tool_pid, signal.SIGKILL)
        os.waitpid(tool_pid, 0)
        for pid, _ in workers.values():
            try:  # only still there when collecting failed
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
    report = {"agent": AGENT, "duration_seconds": args.duration, "rate": args.rate,
              "concurrency": args.concurrency, "vectors": args.vectors, "dim": args.dim,
              "interrupted": bool(stop_requests), "sdk_library": tailcause.library_path,
              "faults": [{"kind": k, "tenant": t} for k, t in args.faults], "tenants": results}
    print_summary(report)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if all("error" not in t for t in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
