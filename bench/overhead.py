#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""tailcause node-level overhead benchmark.

Measures, in one run and side by side (DESIGN.md section 6):
  1. throughput loss of a context-switch-heavy load (`perf bench sched pipe`) untraced, traced by
     tailcause and traced by a bpftrace run-queue-latency one-liner, alternating in rounds so
     that drift on a shared machine hits every condition alike; the cost per context switch;
  2. tailcause's resident memory after serving scrapes under load;
  3. time from process start to the first successful scrape of /metrics;
  4. scrape cost: time, size and series count of /metrics;
  5. which BPF program costs: the kernel's own run time of each tracer's programs.
It prints figures and targets; it never fails on a timing. Standard library only.
"""
import argparse
import atexit
import datetime
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import harness
from harness import (FAMILIES, Bpftrace, Daemon, SpanHolder, bpf_map_bytes, children, cleanup,
                     count_series, die, enable_bpf_stats, ensure_tracefs, log, on_signal,
                     only_families_config, proc_ctxt, proc_status, prog_stats, program_name,
                     pipe_command, restore_bpf_stats, run_pipe, scrape, spawn,
                     tracing_programs)


def measure_switches(loops):
    """Context switches per pipe op: perf stat counts the load's own tasks; /proc/stat's ctxt
    delta around an untraced run is node-wide (other tasks too), printed as a cross-check."""
    out = subprocess.run(["perf", "stat", "-x,", "-e", "context-switches", *pipe_command(loops)],
                         capture_output=True, text=True, start_new_session=True)
    counted = [int(f[0]) / loops for f in (line.split(",") for line in out.stderr.splitlines())
               if len(f) > 2 and "context-switches" in f[2] and f[0].isdigit()]
    ctxt0 = proc_ctxt()
    run_pipe(loops)
    node_wide = (proc_ctxt() - ctxt0) / loops
    log(f"context switches per pipe op: {counted[0] if counted else float('nan'):.2f} (perf stat),"
        f" {node_wide:.2f} node-wide (/proc/stat ctxt)")
    return counted[0] if counted else node_wide


def calibrate(target_s):
    probe = 100_000
    run_pipe(probe)  # warm the page cache and the binary
    ops, _ = run_pipe(probe)
    return max(50_000, min(5_000_000, int(ops * target_s / 10_000) * 10_000))


# ---------------------------------------------------------------------------------------------
# The phases


class Condition:
    def __init__(self, name, kind, families=None, binary=None):
        self.name, self.kind, self.families, self.binary = name, kind, families, binary
        self.ops, self.cpu_ns, self.tracer_cpu = [], [], []  # one figure per round


def measure_round(cond, args, workdir, startups):
    """Set the condition up, let it settle, run the load once, tear it down."""
    tracer = None
    args.foreign |= tracing_programs()  # before ours are loaded: all of them are someone else's
    if cond.kind == "tailcause":
        config = only_families_config(cond.families, workdir) if cond.families else None
        tracer = Daemon(cond.binary or args.binary, config)
        took = tracer.wait_ready()
        if not cond.families:
            startups.append(took)
    elif cond.kind == "bpftrace":
        tracer = Bpftrace()
        tracer.wait_ready()
    time.sleep(args.settle)  # untraced too, so every condition sees the same pause
    cpu0, t0 = tracer.cpu_seconds() if tracer else 0.0, time.monotonic()
    ops, cpu_ns = run_pipe(args.loops)
    if tracer:
        tracer.check_alive("during the load")
        # The tracer's own CPU (polling, timers), as a share of one CPU over the load.
        cond.tracer_cpu.append(100.0 * (tracer.cpu_seconds() - cpu0) / (time.monotonic() - t0))
        tracer.stop()
    cond.ops.append(ops)
    cond.cpu_ns.append(cpu_ns)


def throughput_phase(args, workdir, startups):
    conds = [Condition("untraced", "none"), Condition("bpftrace", "bpftrace")]
    if not args.sched_only:
        conds.insert(1, Condition("tailcause", "tailcause"))
    for spec in filter(None, args.split.split(",")):
        fams = spec.split("+")
        unknown = [f for f in fams if f not in FAMILIES]
        if unknown:
            die(f"--split: unknown family {unknown[0]} (known: {', '.join(FAMILIES)})")
        conds.append(Condition(f"tailcause[{spec}]", "tailcause", fams))
    if args.sched_baseline:
        conds.append(Condition("baseline[sched]", "tailcause", ["sched"], args.sched_baseline))
    log(f"\n== 1. pipe throughput: perf bench sched pipe -l {args.loops}, {args.rounds} rounds "
        f"of {', '.join(c.name for c in conds)} (order rotates each round)")
    for r in range(args.rounds):
        for cond in conds[r % len(conds):] + conds[:r % len(conds)]:
            measure_round(cond, args, workdir, startups)
        log(f"round {r + 1} ops/s: " + "  ".join(f"{c.name} {c.ops[-1]}" for c in conds))
    if args.foreign:
        log(f"WARNING: other tracers' BPF programs were attached during the rounds "
            f"({', '.join(sorted(args.foreign))}); they slow every condition")
    return conds


def loss_pct(base, traced):
    return 100.0 * (1.0 - traced / base)


def report_throughput(conds, per_op_switches):
    """Loss from the medians, and per round against that round's untraced run (drift-robust)."""
    base, figures = conds[0], {}
    base_med, base_cpu = statistics.median(base.ops), statistics.median(base.cpu_ns)
    log(f"\n{'condition':<20}{'median ops/s':>13}{'min':>8}{'max':>8}{'loss':>8}{'paired':>8}"
        f"{'ns/switch':>10}{'CPU ns/op':>10}{'+ns/switch':>11}{'tracer CPU':>11}")
    for c in conds:
        med = statistics.median(c.ops)
        loss = loss_pct(base_med, med)
        paired = statistics.median(loss_pct(b, t) for b, t in zip(base.ops, c.ops))
        ns_switch = (1e9 / med - 1e9 / base_med) / per_op_switches
        cpu = statistics.median(c.cpu_ns)
        cpu_switch = (cpu - base_cpu) / per_op_switches
        own = f"{statistics.median(c.tracer_cpu):.1f}%" if c.tracer_cpu else "-"
        figures[c.name] = dict(ops=med, loss=loss, paired=paired, ns_switch=ns_switch,
                               cpu_switch=cpu_switch, own=own)
        log(f"{c.name:<20}{med:>13.0f}{min(c.ops):>8}{max(c.ops):>8}{loss:>7.1f}%{paired:>7.1f}%"
            f"{ns_switch:>+10.0f}{cpu:>10.0f}{cpu_switch:>+11.0f}{own:>11}")
    log("(loss: from the medians; paired: median of per-round losses; ns/switch: wall time per "
        "switch over untraced; CPU ns/op: user+system time of the load per op; tracer CPU: the "
        "tracer process's own CPU as a share of one CPU during the load)")
    return figures


def memory_and_scrape_phase(args, workdir):
    """Default daemon under load: a few scrapes, then its memory; then 20 timed scrapes."""
    log("\n== 2/4. memory under load, scrape cost (all families, default configuration)")
    d = Daemon(args.binary)
    d.wait_ready()
    at_ready = proc_status(d.proc.pid)
    load = spawn(pipe_command(args.loops), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scratch = os.path.join(workdir, "io-scratch")
    for _ in range(5):
        # Disk writes and page-cache traffic too, so the I/O families have something to hold.
        with open(scratch, "wb") as f:
            f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
        status, _ = scrape(d.port)
        if status != 200:
            d.fail(f"answered {status} to a scrape under load")
        time.sleep(0.3)
    load.wait()
    children.remove(load)
    mem = proc_status(d.proc.pid)
    mem["bpf_maps"] = bpf_map_bytes(d.proc.pid)
    times, body = [], b""
    for _ in range(20):
        t0 = time.perf_counter()
        status, body = scrape(d.port)
        times.append(time.perf_counter() - t0)
    later = proc_status(d.proc.pid)
    d.check_alive("after the scrapes")
    d.stop()
    series, per_metric = count_series(body)
    log(f"at the first scrape: VmRSS {mib(at_ready['VmRSS'])}, VmHWM {mib(at_ready['VmHWM'])}")
    log(f"after 5 scrapes under load: VmRSS {mib(mem['VmRSS'])}, VmHWM {mib(mem['VmHWM'])} "
        f"(anon {mib(mem['RssAnon'])}, file {mib(mem['RssFile'])}); BPF maps "
        f"{mib(mem['bpf_maps'])} of kernel memory")
    log(f"after 20 more scrapes: VmRSS {mib(later['VmRSS'])}, VmHWM {mib(later['VmHWM'])}")
    log(f"scrape: median {statistics.median(times) * 1e3:.2f} ms, min {min(times) * 1e3:.2f}, "
        f"max {max(times) * 1e3:.2f}; {len(body)} bytes, {series} series")
    top = sorted(per_metric.items(), key=lambda kv: -kv[1])[:8]
    log("most series: " + ", ".join(f"{n} {k}" for n, k in top))
    return mem, times, len(body), series


def startup_phase(args, startups):
    """Start to first good scrape; the all-families rounds already gave some samples. One more
    start, at least, whose log says when each family was attached."""
    while True:
        d = Daemon(args.binary)
        startups.append(d.wait_ready())
        steps = attach_steps(d.output(), d.started_wall)
        d.stop()
        if len(startups) >= 5:
            break
    log("\n== 3. start to first scrape (5 ms polling): "
        + ", ".join(f"{t:.3f}" for t in startups) + " s")
    if steps:
        log("last start, from its log (ms after exec): " + ", ".join(steps))


def attach_steps(text, started_wall):
    """'sched: attached at 380 (+380)' marks (ms after exec, ms after the previous mark) from
    the daemon's log lines 'probe <family>: <state>' and 'serving ...'."""
    steps, last = [], started_wall
    for stamp, what in re.findall(r"^(\S+) \w+ (?:probe (\w+: \w+)|serving)", text, re.M):
        try:
            at = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        except ValueError:
            continue
        steps.append(f"{what or 'serving'} at {(at - started_wall) * 1e3:.0f} "
                     f"(+{(at - last) * 1e3:.0f})")
        last = at
    return steps


OPEN_SPAN = "tailcause, a span open elsewhere"


def program_time_phase(args, workdir):
    """The kernel's own count of each tracer's BPF program time (kernel.bpf_stats_enabled) over
    one load run, per context switch of the node. It names the program that costs; it leaves
    out the tracepoint plumbing around the programs (larger for bpftrace's perf-event
    tracepoints than for tp_btf) and is itself a few ns per run, so it runs on its own."""
    log("\n== 5. BPF program time per context switch (kernel.bpf_stats_enabled, one load run)")
    enable_bpf_stats()
    totals = {}
    tracers = [("tailcause", lambda: Daemon(args.binary)),
               (OPEN_SPAN, lambda: Daemon(args.binary)),
               ("tailcause[sched]",
                lambda: Daemon(args.binary, only_families_config(["sched"], workdir))),
               ("bpftrace", Bpftrace)]
    if args.sched_only:
        tracers = tracers[2:]
    if args.sched_baseline:
        tracers.append(("baseline[sched]", lambda: Daemon(
            args.sched_baseline, only_families_config(["sched"], workdir))))
    for label, tracer in tracers:
        t = tracer()
        t.wait_ready()
        holder = SpanHolder(args.build_dir) if label == OPEN_SPAN else None
        if holder:
            holder.wait_attached()
        time.sleep(args.settle)
        before, ctxt0 = prog_stats(t.proc.pid), proc_ctxt()
        run_pipe(args.loops)
        after, switches = prog_stats(t.proc.pid), proc_ctxt() - ctxt0
        if holder:
            holder.stop()
            if b'tenant="bench-span-holder"' not in scrape(t.port)[1]:
                log("WARNING: the daemon saw no span of the span holder")
        rows = []
        for prog, (ns, runs) in after.items():
            ns, runs = ns - before.get(prog, (0, 0))[0], runs - before.get(prog, (0, 0))[1]
            if runs:
                rows.append((ns / switches, runs / switches, ns / runs, prog))
        names = {prog: program_name(prog) for prog in after}
        t.stop()
        totals[label] = sum(r[0] for r in rows)
        if label in ("tailcause", OPEN_SPAN):
            # The critical path's wake-up tracking (issue 10): its own program, on every wake-up;
            # and all of the family's scheduler programs, for threads outside spans.
            key = "critpath" if label == "tailcause" else "critpath_open"
            totals[key] = sum(r[0] for r in rows if names[r[3]].startswith("attrib_waking"))
            totals[key + "_sched"] = sum(r[0] for r in rows if names[r[3]].startswith(
                ("attrib_waking", "attrib_switch", "attrib_migrate")))
        log(f"{label}: {totals[label]:.0f} ns of BPF program time per context switch "
            f"({switches} switches on the node)")
        for per_switch, runs, per_run, prog in sorted(rows, reverse=True):
            log(f"  {names[prog]:<30} {per_switch:>6.0f} ns/switch  "
                f"{runs:>5.2f} runs/switch  {per_run:>6.0f} ns/run")
    restore_bpf_stats()
    return totals


def mib(n):
    return f"{n / 1048576:.1f} MB"


def summary(conds, figures, per_op_switches, mem, startups, scrape_times, size, series, prog):
    base, bt = figures["untraced"], figures["bpftrace"]
    log("\n== summary ==")
    parts = [f"untraced {base['ops'] / 1000:.0f}k ops/s"]
    parts += [f"{c.name} {figures[c.name]['ops'] / 1000:.0f}k ({-figures[c.name]['loss']:+.1f}%)"
              for c in conds[1:]]
    log("pipe throughput: " + ", ".join(parts))
    sched_against_bpftrace(figures, prog)
    sched_against_bpftrace(figures, prog, "baseline[sched]")
    if "critpath" in prog:
        # Against the untraced load's own wall time per switch: what the tracking adds to it.
        per_switch = 1e9 / base["ops"] / per_op_switches
        log(f"critical-path wake-up tracking (attrib_waking, bpf_stats): {prog['critpath']:.0f} ns "
            f"per switch, +{100 * prog['critpath'] / per_switch:.1f}% of the untraced "
            f"{per_switch:.0f} ns per switch (target <= +5%; its tp_btf plumbing not included)")
        if "critpath_open" in prog:
            log(f"  with a span open in another process (the load's threads outside spans): "
                f"attrib_waking {prog['critpath_open']:.0f} ns per switch "
                f"(+{100 * prog['critpath_open'] / per_switch:.1f}%); the family's scheduler "
                f"programs {prog['critpath_open_sched']:.0f} ns "
                f"(+{100 * prog['critpath_open_sched'] / per_switch:.1f}%), against "
                f"{prog['critpath_sched']:.0f} ns with none open")
    if "tailcause" not in figures:
        return
    it = figures["tailcause"]
    if bt["loss"] > 0.5:
        paired = f"{it['paired'] / bt['paired']:.2f}" if bt["paired"] > 0.5 else "n/a"
        log(f"loss ratio tailcause/bpftrace: {it['loss'] / bt['loss']:.2f} (target <= 0.5); "
            f"paired per round: {paired}")
    else:
        log(f"loss ratio tailcause/bpftrace: n/a, bpftrace's loss ({bt['loss']:.1f}%) is within "
            f"the noise (target <= 0.5)")
    cpu_ratio = (f"{it['cpu_switch'] / bt['cpu_switch']:.2f}" if bt["cpu_switch"] > 1 else "n/a")
    log(f"cost per context switch: tailcause {it['ns_switch']:+.0f} ns, bpftrace "
        f"{bt['ns_switch']:+.0f} ns of wall time; in the load's CPU time tailcause "
        f"{it['cpu_switch']:+.0f} ns, bpftrace {bt['cpu_switch']:+.0f} ns (ratio {cpu_ratio}); "
        f"{per_op_switches:.2f} switches per pipe op")
    if prog:
        log(f"BPF program time per context switch (bpf_stats): tailcause "
            f"{prog['tailcause']:.0f} ns, bpftrace {prog['bpftrace']:.0f} ns")
    log(f"tracer's own CPU during the load: tailcause {it['own']}, bpftrace {bt['own']} "
        f"of one CPU")
    log(f"resident memory after scrapes under load: VmRSS {mib(mem['VmRSS'])}, VmHWM "
        f"{mib(mem['VmHWM'])} (target < 30 MB); BPF maps {mib(mem['bpf_maps'])} of kernel "
        f"memory, not in RSS")
    log(f"start to first scrape: {statistics.median(startups):.3f} s median of {len(startups)} "
        f"(target <= 0.5 s)")
    log(f"scrape: {statistics.median(scrape_times) * 1e3:.2f} ms median of {len(scrape_times)}, "
        f"{size} bytes, {series} series")


def ratio(ours, theirs, floor):
    """ours/theirs, or n/a when the peer's figure is within the noise (at most `floor`)."""
    return f"{ours / theirs:.2f}" if theirs > floor else "n/a"


def sched_against_bpftrace(figures, prog, name="tailcause[sched]"):
    """The sched family alone against the bpftrace one-liner: both time run-queue waits from
    wake-up to switch-in with ktime, so this is the like-for-like cost (target <= 0.5)."""
    st, bt = figures.get(name), figures["bpftrace"]
    if not st:
        return
    parts = [f"loss {ratio(st['loss'], bt['loss'], 0.5)}",
             f"paired loss {ratio(st['paired'], bt['paired'], 0.5)}",
             f"wall ns/switch {ratio(st['ns_switch'], bt['ns_switch'], 1)}",
             f"load CPU ns/switch {ratio(st['cpu_switch'], bt['cpu_switch'], 1)}"]
    if prog and name in prog:
        parts.append(f"BPF program time {ratio(prog[name], prog['bpftrace'], 1)}")
    label = "sched family alone" if name == "tailcause[sched]" else name
    log(f"{label} / bpftrace (target <= 0.5): " + ", ".join(parts))


def check_environment(args):
    if os.geteuid() != 0:
        die("run as root: tailcause and bpftrace load BPF programs (try: sudo make bench)")
    if not os.access(args.binary, os.X_OK):
        die(f"{args.binary} not found; build it first (make build)")
    for tool in ("perf", "bpftrace"):
        if not shutil.which(tool):
            die(f"{tool} not found; scripts/install-deps.sh installs it (linux-perf, bpftrace)")
    ensure_tracefs()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build_dir", help="build directory holding the tailcause binary")
    p.add_argument("--rounds", type=int, default=7, help="rounds of the alternating conditions")
    p.add_argument("--seconds", type=float, default=2.5, help="target length of one load run")
    p.add_argument("--loops", type=int, default=0, help="pipe loops per run (default: calibrated)")
    p.add_argument("--settle", type=float, default=0.5, help="pause before each load run (s)")
    p.add_argument("--split", default="sched",
                   help="extra tailcause conditions with only these families, e.g. "
                        "'sched,tcp+memory' ('' for none)")
    p.add_argument("--no-prog-time", action="store_true",
                   help="skip the per-program BPF time phase (it turns on "
                        "kernel.bpf_stats_enabled for a while)")
    p.add_argument("--sched-only", action="store_true",
                   help="only untraced, bpftrace and the sched family (and --sched-baseline): "
                        "the quick check of the sched family's cost, no memory, start-up or "
                        "scrape phases")
    p.add_argument("--sched-baseline", metavar="BINARY",
                   help="another build's tailcause, measured with the sched family alone as "
                        "'baseline[sched]' in the same rounds (before/after in one run)")
    p.add_argument("--pin", type=int, metavar="CPU",
                   help="run the load's two processes on this CPU only (taskset)")
    args = p.parse_args()
    harness.pin_cpu = args.pin
    args.foreign = set()
    if args.sched_only and "sched" not in args.split.split(","):
        args.split = ",".join(filter(None, [args.split, "sched"]))
    args.binary = os.path.join(args.build_dir, "tailcause")
    atexit.register(cleanup)
    # Also when started in the background, where SIGINT arrives ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    check_environment(args)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    began = time.monotonic()
    log(f"tailcause overhead benchmark: {os.cpu_count()} CPUs, kernel {os.uname().release}, "
        f"{args.binary}, load {'on CPU %d' % args.pin if args.pin is not None else 'unpinned'}, "
        f"load average {os.getloadavg()[0]:.1f}")
    args.loops = args.loops or calibrate(args.seconds)
    per_op = measure_switches(min(args.loops, 200_000))

    startups = []
    with tempfile.TemporaryDirectory(prefix="tailcause-bench-") as workdir:
        conds = throughput_phase(args, workdir, startups)
        figures = report_throughput(conds, per_op)
        mem, scrape_times, size, series = {}, [], 0, 0
        if not args.sched_only:
            mem, scrape_times, size, series = memory_and_scrape_phase(args, workdir)
            startup_phase(args, startups)
        prog_time = program_time_phase(args, workdir) if not args.no_prog_time else {}
        summary(conds, figures, per_op, mem, startups, scrape_times, size, series, prog_time)
    log(f"(benchmark took {time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("\nbench: interrupted, cleaning up", file=sys.stderr)
        sys.exit(130)
