#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""tailcause agent-level overhead benchmark.

Measures, on the example agent and the attribution family (bench/README.md, "Agent overhead"):
  1. throughput of build/examples/rag-agent (two tenants, saturated) untraced and fully traced
     by the daemon's default configuration, alternating in rounds: completed requests per second
     and per CPU-second of the tenants, the daemon's own CPU, the stage records it counted;
  2. stage records per second the daemon consumes without loss, from attrib_target's `flood`
     mode (stage_begin/stage_end as fast as the threads can) and /metrics deltas, with the
     daemon's resident memory idle (attached, before the floods) and at its peak under them.
It prints figures and targets; it never fails on a timing. Standard library only.
"""
import argparse
import atexit
import json
import mmap
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from harness import (Daemon, cleanup, die, log, memory_breakdown, on_signal, proc_status, scrape,
                     spawn, stop_process)

STAGES = ("prompt", "embedding", "retrieval", "generation", "tool", "response")
FLOOD_TENANT = "attrib-flood"  # attrib_target's flood mode labels its stages with it


# ---------------------------------------------------------------------------------------------
# /metrics


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def series(body):
    """[(name, {label: value}, float)] of a Prometheus text exposition."""
    out = []
    for line in body.decode(errors="replace").splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        try:
            out.append((name, dict(LABEL.findall(labels)), float(value)))
        except ValueError:
            continue
    return out


def metric_sum(samples, name, match=None):
    """Sum of a metric's series whose labels satisfy match(labels)."""
    return sum(v for n, labels, v in samples if n == name and (match is None or match(labels)))


def metrics(daemon):
    status, body = scrape(daemon.port)
    if status != 200:
        daemon.fail(f"answered /metrics with {status}")
    return series(body)


class Counters:
    """The figures a traced run reads before and after itself."""

    def __init__(self, daemon, tenants):
        m = metrics(daemon)
        mine = lambda labels: labels.get("tenant") in tenants  # noqa: E731
        self.stages = metric_sum(m, "tailcause_stage_duration_seconds_count", mine)
        self.all_stages = metric_sum(m, "tailcause_stage_duration_seconds_count")
        self.lost = metric_sum(m, "tailcause_events_lost_total",
                               lambda labels: labels.get("source") == "attrib")
        self.attached = metric_sum(m, "tailcause_usdt_attached_binaries")
        self.cpu = daemon.cpu_seconds()


# ---------------------------------------------------------------------------------------------
# Keeping the probes attached from the first request


class MappedExecutable:
    """Maps a binary executable into this process, as its own processes will.

    The attrib family attaches to every binary with tailcause probes that some process maps
    executable (its rescan, each second), and releases it when none does. Holding a mapping lets
    the daemon attach before the agent starts, so that a traced run is traced from its first
    request instead of from the daemon's next look at the new process."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        with open(self.path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                                 prot=mmap.PROT_READ | mmap.PROT_EXEC)

    def close(self):
        self.map.close()


def start_attached_daemon(binary, target, timeout=30.0):
    """A fresh daemon (default configuration: every family), once /metrics answers and its log
    says the target's probes are attached. Returns (daemon, seconds to ready)."""
    daemon = Daemon(binary)
    daemon.wait_ready()
    line = f"probe(s) in {target}"
    while time.monotonic() - daemon.started < timeout:
        daemon.check_alive("before attaching the probes")
        if line in daemon.output():
            return daemon, time.monotonic() - daemon.started
        time.sleep(0.02)
    daemon.fail(f"never logged 'attrib: attached N {line}' within {timeout:.0f} s")


# ---------------------------------------------------------------------------------------------
# The agent


def run_agent(agent, args, workdir, label):
    """One rag-agent run; returns its report (JSON)."""
    report = os.path.join(workdir, f"report-{label}.json")
    with open(os.path.join(workdir, f"agent-{label}.log"), "w+") as out:
        proc = spawn([agent, "--tenants", ",".join(args.tenants), "--rate", str(args.rate),
                      "--concurrency", str(args.concurrency), "--duration", str(args.duration),
                      "--report", report], stdout=out, stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=args.duration + 60)
        except subprocess.TimeoutExpired:
            stop_process(proc)
            die(f"rag-agent did not finish within {args.duration + 60:.0f} s")
        stop_process(proc)
        out.seek(0)
        text = out.read()
    if proc.returncode != 0 or not os.path.exists(report):
        die(f"rag-agent exited with status {proc.returncode}:\n{text[-3000:]}")
    with open(report) as f:
        rep = json.load(f)
    for name, t in rep["tenants"].items():
        if "error" in t:
            die(f"rag-agent tenant {name} failed: {t['error']}")
    return rep


class AgentRun:
    def __init__(self, report):
        ts = report["tenants"].values()
        self.completed = sum(t["requests"]["completed"] for t in ts)
        self.failed = sum(t["requests"]["failed"] for t in ts)
        self.rps = sum(t["requests"]["completed"] / t["wall_seconds"] for t in ts)
        self.cpu = sum(t["cpu_seconds"] for t in ts)
        self.per_cpu_s = self.completed / self.cpu if self.cpu else 0.0
        self.stages = sum(t["stages"][s]["count"] for t in ts for s in STAGES
                          if s in t["stages"])
        self.wall = max(t["wall_seconds"] for t in ts)
        # Filled in for traced runs.
        self.daemon_cpu = self.traced_stages = self.lost = None


def loss_pct(base, traced):
    return (1 - traced / base) * 100 if base else float("nan")


def throughput_phase(args, build, workdir):
    agent = os.path.join(build, "examples", "rag-agent")
    target = os.path.realpath(agent)
    log(f"\n== rag-agent throughput: tenants {','.join(args.tenants)}, --rate {args.rate:g} "
        f"--concurrency {args.concurrency}, {args.duration:g} s per run, {args.rounds} rounds ==")
    run_agent(agent, argparse.Namespace(**{**vars(args), "duration": 2}), workdir, "warmup")
    held = MappedExecutable(target)
    untraced, traced, attach_s = [], [], []
    try:
        for r in range(args.rounds):
            # Alternate which goes first, so that drift hits both alike.
            for cond in (("untraced", "traced") if r % 2 == 0 else ("traced", "untraced")):
                time.sleep(0.5)
                if cond == "untraced":
                    run = AgentRun(run_agent(agent, args, workdir, f"{r}-{cond}"))
                    untraced.append(run)
                else:
                    daemon, ready = start_attached_daemon(args.daemon,
                                                          target)
                    attach_s.append(ready)
                    before = Counters(daemon, args.tenants)
                    run = AgentRun(run_agent(agent, args, workdir, f"{r}-{cond}"))
                    time.sleep(0.3)  # the daemon drains its ring buffer every 100 ms
                    after = Counters(daemon, args.tenants)
                    daemon.stop()
                    run.daemon_cpu = after.cpu - before.cpu
                    run.traced_stages = after.stages - before.stages
                    run.lost = after.lost - before.lost
                    traced.append(run)
                log(f"round {r + 1} {cond:<9} {run.rps:8.1f} req/s  {run.per_cpu_s:7.2f} "
                    f"req/CPU-s  {run.completed:6d} done {run.failed} failed"
                    + (f"  daemon CPU {run.daemon_cpu / run.wall * 100:5.1f}% of one CPU,"
                       f" stages traced {run.traced_stages:.0f} of {run.stages}"
                       f" the agent counted, lost {run.lost:.0f}" if run.daemon_cpu is not None
                       else ""))
    finally:
        held.close()
    return untraced, traced, attach_s


def report_throughput(untraced, traced, attach_s):
    med = lambda runs, key: statistics.median(getattr(x, key) for x in runs)  # noqa: E731
    rps_u, rps_t = med(untraced, "rps"), med(traced, "rps")
    cpu_u, cpu_t = med(untraced, "per_cpu_s"), med(traced, "per_cpu_s")
    pair_rps = statistics.median(t.rps / u.rps for u, t in zip(untraced, traced))
    pair_cpu = statistics.median(t.per_cpu_s / u.per_cpu_s for u, t in zip(untraced, traced))
    d_cpu = statistics.median(t.daemon_cpu / t.wall for t in traced) * 100
    d_per_req = statistics.median(t.daemon_cpu / t.completed for t in traced) * 1e6
    added_us = (1 / cpu_t - 1 / cpu_u) * 1e6 if cpu_u and cpu_t else float("nan")
    stages = sum(t.traced_stages for t in traced)
    counted = sum(t.stages for t in traced)
    lost = sum(t.lost for t in traced)
    rng = lambda runs, key: (f"{min(getattr(x, key) for x in runs):.1f}.."  # noqa: E731
                             f"{max(getattr(x, key) for x in runs):.1f}")
    log(f"\n{'condition':<10}{'median req/s':>14}{'range':>16}{'median req/CPU-s':>18}"
        f"{'range':>16}")
    log(f"{'untraced':<10}{rps_u:>14.1f}{rng(untraced, 'rps'):>16}{cpu_u:>18.2f}"
        f"{rng(untraced, 'per_cpu_s'):>16}")
    log(f"{'traced':<10}{rps_t:>14.1f}{rng(traced, 'rps'):>16}{cpu_t:>18.2f}"
        f"{rng(traced, 'per_cpu_s'):>16}")
    log(f"(daemon start to probes attached: median {statistics.median(attach_s):.2f} s; "
        f"the agent started after that)")
    return dict(rps_u=rps_u, rps_t=rps_t, cpu_u=cpu_u, cpu_t=cpu_t, pair_rps=pair_rps,
                pair_cpu=pair_cpu, added_us=added_us, d_cpu=d_cpu, d_per_req=d_per_req, stages=stages,
                counted=counted, lost=lost)


# ---------------------------------------------------------------------------------------------
# Stage records per second


def mb(n):
    return f"{n / 1048576:.1f} MB"


def breakdown_line(parts):
    return (f"Rss {mb(parts['Rss'])} (BPF maps mapped {mb(parts['bpf_maps'])}, heap and other "
            f"anonymous {mb(parts['heap_anon'])}, executable {mb(parts['binary'])}, libraries "
            f"{mb(parts['libraries'])}); Pss {mb(parts['Pss'])}, Private_Dirty "
            f"{mb(parts['Private_Dirty'])}, Anonymous {mb(parts['Anonymous'])}")


class RssSampler:
    """The daemon's peak VmRSS while it runs, sampled every 20 ms on a thread."""

    def __init__(self, pid):
        self.pid, self.peak, self.done = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            self.peak = max(self.peak, proc_status(self.pid)["VmRSS"])
            if self.done.wait(0.02):
                return

    def stop(self):
        self.done.set()
        self.thread.join()
        return max(self.peak, proc_status(self.pid)["VmRSS"])


def flood_phase(args, build):
    target = os.path.realpath(os.path.join(build, "testprogs", "attrib_target"))
    log(f"\n== stage records/s: attrib_target flood {args.flood_stages} stages x "
        f"{args.flood_threads} threads, {args.flood_runs} runs ==")
    held = MappedExecutable(target)
    daemon, _ = start_attached_daemon(args.daemon, target)
    runs = []
    try:
        # Idle: attached, a few ticks and scrapes in, nothing traced yet.
        for _ in range(5):
            metrics(daemon)
            time.sleep(0.2)
        idle_rss = proc_status(daemon.proc.pid)["VmRSS"]
        idle_parts = memory_breakdown(daemon.proc.pid)
        log(f"daemon resident memory idle (attached, before the floods): VmRSS {mb(idle_rss)}; "
            + breakdown_line(idle_parts))
        for i in range(args.flood_runs):
            before = Counters(daemon, {FLOOD_TENANT})
            sampler = RssSampler(daemon.proc.pid)
            try:
                out = subprocess.run([target, "flood", str(args.flood_stages),
                                      str(args.flood_threads), "1"],
                                     capture_output=True, text=True, timeout=120)
            finally:
                peak_rss = sampler.stop()
                after_parts = memory_breakdown(daemon.proc.pid)
            m = re.search(r"elapsed_ns=(\d+)", out.stdout)
            if out.returncode != 0 or not m:
                die(f"attrib_target flood failed (rc {out.returncode}):\n"
                    f"{out.stdout}{out.stderr}")
            ended = time.monotonic()
            elapsed = int(m.group(1)) * 1e-9
            emitted = args.flood_stages * args.flood_threads
            # The daemon may still be draining what the ring buffer holds: wait until the count
            # stops moving (or everything emitted has arrived).
            after, last = Counters(daemon, {FLOOD_TENANT}), -1.0
            while (after.stages - before.stages < emitted and after.stages != last
                   and time.monotonic() - ended < 10):
                last = after.stages
                time.sleep(0.2)
                after = Counters(daemon, {FLOOD_TENANT})
            drained = time.monotonic() - ended
            consumed, lost = after.stages - before.stages, after.lost - before.lost
            cpu = after.cpu - before.cpu
            runs.append(dict(elapsed=elapsed, emitted=emitted, consumed=consumed, lost=lost,
                             rate=consumed / elapsed, cpu=cpu, drained=drained,
                             idle_rss=idle_rss, peak_rss=peak_rss, idle_parts=idle_parts,
                             after_parts=after_parts))
            log(f"run {i + 1}: {emitted} stages emitted in {elapsed:.3f} s "
                f"({emitted / elapsed / 1e6:.2f} M/s), {consumed:.0f} consumed "
                f"({consumed / elapsed / 1e6:.2f} M/s over the emitting window), {lost:.0f} lost, "
                f"all in {drained:.2f} s after the flood ended; daemon CPU {cpu:.2f} s "
                f"({cpu * 1e9 / max(consumed, 1):.0f} ns per record); VmRSS at most "
                f"{mb(peak_rss)} during it")
            log(f"  right after it: {breakdown_line(after_parts)}")
    finally:
        daemon.stop()
        held.close()
    return runs


# ---------------------------------------------------------------------------------------------


def summary(t, flood):
    log("\n== summary ==")
    if t is not None:
        throughput_summary(t)
    flood_summary(flood)


def throughput_summary(t):
    loss_rps, loss_cpu = loss_pct(t["rps_u"], t["rps_t"]), loss_pct(t["cpu_u"], t["cpu_t"])
    log(f"example-agent throughput untraced vs fully traced (target: under 2% loss): "
        f"{t['rps_u']:.1f} vs {t['rps_t']:.1f} req/s ({loss_rps:+.1f}% loss; paired ratio "
        f"{t['pair_rps']:.3f}); per tenant CPU-second {t['cpu_u']:.2f} vs {t['cpu_t']:.2f} "
        f"({loss_cpu:+.1f}% loss; paired ratio {t['pair_cpu']:.3f}; {t['added_us']:+.0f} us of the "
        f"tenants' CPU per request)")
    log(f"  daemon CPU while traced: {t['d_cpu']:.1f}% of one CPU, {t['d_per_req']:.0f} us per "
        f"request; tailcause_stage_duration_seconds_count grew by {t['stages']:.0f} for the "
        f"{t['counted']} stages the agent counted ({t['stages'] / max(t['counted'], 1) * 100:.1f}%);"
        f" tailcause_events_lost_total{{source=\"attrib\"}} grew by {t['lost']:.0f}")


def flood_summary(flood):
    clean = [r for r in flood if r["lost"] == 0 and r["consumed"] >= r["emitted"]]
    best = max(r["rate"] for r in clean) if clean else 0.0
    median = statistics.median(r["rate"] for r in clean) if clean else 0.0
    lost = sum(r["lost"] for r in flood)
    per_cpu = sum(r["consumed"] for r in flood) / max(sum(r["cpu"] for r in flood), 1e-9)
    log(f"stage records per second consumed without loss (target >= 1M/s): "
        + (f"{best / 1e6:.2f} M/s at most, median {median / 1e6:.2f} M/s ({len(clean)} of "
           f"{len(flood)} runs with every record consumed)" if clean
           else "none of the runs was without loss")
        + f"; lost {lost:.0f} of {sum(r['emitted'] for r in flood)} emitted in all; the "
        f"emitters' rate bounds the figure from below")
    log(f"  the daemon's own CPU: {per_cpu / 1e6:.2f} M records per CPU-second "
        f"({1e9 / per_cpu:.0f} ns per record, all its families included)")
    if flood:
        log(f"daemon resident memory (target <= 30 MB): VmRSS idle {mb(flood[0]['idle_rss'])}, "
            f"at most {mb(max(r['peak_rss'] for r in flood))} under the floods")
        log(f"  idle: {breakdown_line(flood[0]['idle_parts'])}")
        log(f"  after the last flood: {breakdown_line(flood[-1]['after_parts'])}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build_dir")
    p.add_argument("--rounds", type=int, default=4, help="untraced/traced pairs (default 4)")
    p.add_argument("--duration", type=float, default=6, help="seconds per agent run (6)")
    p.add_argument("--rate", type=float, default=1000,
                   help="offered requests/s per tenant, enough to saturate (1000)")
    p.add_argument("--concurrency", type=int, default=2, help="worker threads per tenant (2)")
    p.add_argument("--tenants", default="bench-a,bench-b", help="agent tenants (bench-a,bench-b)")
    p.add_argument("--flood-stages", type=int, default=1_000_000,
                   help="stages per emitting thread of each flood (1000000)")
    p.add_argument("--flood-threads", type=int, default=2, help="emitting threads (2)")
    p.add_argument("--flood-runs", type=int, default=3, help="flood runs (3)")
    p.add_argument("--flood-only", action="store_true",
                   help="skip the agent throughput phase (records/s and resident memory only)")
    p.add_argument("--daemon", help="the daemon binary to measure (BUILD_DIR/tailcause), e.g. "
                   "another build's, to compare")
    args = p.parse_args()
    args.tenants = args.tenants.split(",")
    build = args.build_dir
    args.daemon = os.path.realpath(args.daemon or os.path.join(build, "tailcause"))
    if not os.access(args.daemon, os.X_OK):
        die(f"{args.daemon} not found or not executable")
    needed = ["testprogs/attrib_target"] + ([] if args.flood_only else ["examples/rag-agent"])
    for path in needed:
        if not os.access(os.path.join(build, path), os.X_OK):
            die(f"{build}/{path} not found; build it first (targets tailcause rag-agent "
                "attrib_target)")
    if os.geteuid() != 0:
        die("run as root: tailcause loads BPF programs")
    atexit.register(cleanup)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    began = time.monotonic()
    log(f"tailcause agent overhead benchmark: {os.cpu_count()} CPUs, kernel "
        f"{os.uname().release}, load average {os.getloadavg()[0]:.1f}")
    figures = None
    if not args.flood_only:
        with tempfile.TemporaryDirectory(prefix="tailcause-agentbench-") as workdir:
            figures = report_throughput(*throughput_phase(args, build, workdir))
    flood = flood_phase(args, build)
    summary(figures, flood)
    log(f"(benchmark took {time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("\nbench: interrupted, cleaning up", file=sys.stderr)
        sys.exit(130)
