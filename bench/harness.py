# SPDX-License-Identifier: Apache-2.0
"""Process control and /proc readers for the overhead benchmark (bench/overhead.py): the load,
the two tracers, their cleanup on any exit, and what the kernel says about them."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

# The baseline every user already has: run-queue latency as a bpftrace one-liner. bpftrace 0.17
# (Debian 12) spells tracepoint arguments `args->x`; newer releases also accept `args.x`.
BPFTRACE_PROGRAM = (
    "tracepoint:sched:sched_wakeup,tracepoint:sched:sched_wakeup_new "
    "{ @qtime[args->pid] = nsecs; } "
    "tracepoint:sched:sched_switch "
    "{ if (args->prev_state == 0) { @qtime[args->prev_pid] = nsecs; } "
    "$ns = @qtime[args->next_pid]; if ($ns) { @usecs = hist((nsecs - $ns) / 1000); } "
    "delete(@qtime[args->next_pid]); }")
BPFTRACE_PROBES = 3
FAMILIES = ("sched", "throttle", "tcp", "memory", "block", "attrib")
TRACEFS = "/sys/kernel/tracing"

BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"

# Every process we start, so that an error or Ctrl-C never leaves a tracer attached.
children = []
stray_logs = set()  # logs of tracers not yet stopped, removed by cleanup() after Ctrl-C
own_programs = set()  # ids of the BPF programs our tracers held, told apart from others' programs
saved_bpf_stats = None  # the sysctl's value before we turned it on, restored at exit


def log(msg):
    print(msg, flush=True)


def die(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def stop_process(proc, sig=signal.SIGTERM, grace=10.0):
    """Signals the child's whole process group (perf bench forks its workers), then kills it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            proc.wait()
    if proc in children:
        children.remove(proc)


def cleanup():
    for proc in list(children):
        stop_process(proc, signal.SIGTERM, grace=5)
    for path in stray_logs:
        os.unlink(path)
    restore_bpf_stats()


def on_signal(signum, _frame):
    raise SystemExit(f"bench: interrupted by signal {signum}, cleaning up")


def spawn(argv, **kw):
    # A session of its own: a terminal Ctrl-C reaches only us, and we stop children in order.
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    children.append(proc)
    return proc


# ---------------------------------------------------------------------------------------------
# The load and the tracers


pin_cpu = None  # run the load on this CPU only (--pin), or where the scheduler puts it


def pipe_command(loops):
    """The context-switch-heavy load: two processes bouncing a token over a pipe."""
    pin = ["taskset", "-c", str(pin_cpu)] if pin_cpu is not None else []
    return pin + ["perf", "bench", "sched", "pipe", "-l", str(loops)]


def run_pipe(loops):
    """One `perf bench sched pipe` run: (ops/s as perf reports it, CPU ns per op of the load).

    The CPU time (user + system of perf and its two workers, from wait4) is the less noisy
    figure on a shared machine: tracing cost runs in the switching tasks, a competing build
    mostly lengthens the wall time."""
    proc = subprocess.Popen(pipe_command(loops), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    children.append(proc)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    children.remove(proc)
    m = re.search(r"^\s*(\d+)\s+ops/sec", out, re.M)
    if proc.returncode != 0 or not m:
        die(f"perf bench sched pipe failed (rc {proc.returncode}):\n{out}")
    return int(m.group(1)), (usage.ru_utime + usage.ru_stime) * 1e9 / loops


def proc_ctxt():
    with open("/proc/stat") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("ctxt "))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, timeout=5.0):
    """GET /metrics; returns (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class Tracer:
    """A traced condition's process, with its output in a log file shown if it fails."""
    name, stop_signal = "tracer", signal.SIGTERM

    def __init__(self, argv, env=None):
        # In /tmp, not the run's scratch directory, so that a failed tracer's log outlives us.
        self.log = tempfile.NamedTemporaryFile(prefix=f"{self.name}-", suffix=".log",
                                               delete=False)
        stray_logs.add(self.log.name)
        self.started, self.started_wall = time.monotonic(), time.time()
        self.proc = spawn(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def check_alive(self, when):
        if self.proc.poll() is not None:
            self.fail(f"exited with status {self.proc.returncode} {when}")

    def fail(self, why):
        self.stop(keep_log=True)
        die(f"{self.name} {why}; its output ({self.log.name}):\n{self.output()[-3000:]}")

    def cpu_seconds(self):
        """User + system time the tracer process itself has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, keep_log=False):
        if self.proc.poll() is None:
            own_programs.update(prog_stats(self.proc.pid))
        stop_process(self.proc, self.stop_signal, grace=20)
        self.log.close()
        stray_logs.discard(self.log.name)
        if not keep_log:
            os.unlink(self.log.name)


class Daemon(Tracer):
    """One tailcause process; ready once /metrics answers (its probes are attached then)."""
    name = "tailcause"

    def __init__(self, binary, config=None):
        self.port = free_port()
        argv = [binary, "run", "--listen", f"127.0.0.1:{self.port}"]
        super().__init__(argv + (["--config", config] if config else []))

    def wait_ready(self, timeout=60.0, poll=0.005):
        """Seconds from process start to the first 200 from /metrics, polled every 5 ms."""
        while time.monotonic() - self.started < timeout:
            self.check_alive("before serving /metrics")
            try:
                if scrape(self.port, timeout=1.0)[0] == 200:
                    return time.monotonic() - self.started
            except OSError:
                pass
            time.sleep(poll)
        self.fail(f"did not serve /metrics within {timeout:.0f} s")


# Keeps one stage span open in its own process (closed and reopened every 0.5 s) once the
# daemon has attached to its SDK library.
SPAN_HOLDER = """
import time, tailcause
while not tailcause.enabled():
    time.sleep(0.05)
print("attached", flush=True)
while True:
    with tailcause.Request("bench-span-holder", "bench") as request:
        with tailcause.Stage(request, tailcause.Stage.GENERATION):
            time.sleep(0.5)
"""


class SpanHolder(Tracer):
    """A Python process with an open span: while it runs, the attrib family's scheduler
    programs take their path for threads outside spans on every other thread of the node,
    where with no span open anywhere they return after one load."""
    name = "span-holder"

    def __init__(self, build_dir):
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.path.join(repo, "sdk", "python"),
                   TAILCAUSE_SDK_LIB=os.path.join(build_dir, "sdk", "libtailcause_sdk.so"))
        super().__init__(["/usr/bin/python3", "-c", SPAN_HOLDER], env)

    def wait_attached(self, timeout=30.0):
        while time.monotonic() - self.started < timeout:
            self.check_alive("before the daemon attached to it")
            if "attached" in self.output():
                return
            time.sleep(0.05)
        self.fail(f"was not attached within {timeout:.0f} s")


class Bpftrace(Tracer):
    name, stop_signal = "bpftrace", signal.SIGINT

    def __init__(self):
        super().__init__(["bpftrace", "-e", BPFTRACE_PROGRAM])

    def wait_ready(self, timeout=60.0):
        # "Attaching N probes..." is printed before the attach; the probes are live once the
        # process holds one perf event per tracepoint, each with its program set.
        while time.monotonic() - self.started < timeout:
            self.check_alive("before attaching")
            if "Attaching" in self.output() and self.perf_event_fds() >= BPFTRACE_PROBES:
                time.sleep(0.2)
                return time.monotonic() - self.started
            time.sleep(0.02)
        self.fail(f"did not attach within {timeout:.0f} s")

    def perf_event_fds(self):
        """Attachments held: perf events (bpftrace 0.17) or BPF links (newer releases)."""
        fd_dir = f"/proc/{self.proc.pid}/fd"
        n = 0
        for fd in os.listdir(fd_dir):
            try:
                n += os.readlink(f"{fd_dir}/{fd}") in ("anon_inode:[perf_event]",
                                                       "anon_inode:bpf_link")
            except OSError:
                pass
        return n


def ensure_tracefs():
    """bpftrace reads tracepoint formats from tracefs; mount it for the run if it is missing."""
    if any(os.path.isdir(f"{d}/events/sched") for d in (TRACEFS, "/sys/kernel/debug/tracing")):
        return
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"bpftrace needs tracefs and it could not be mounted at {TRACEFS}: {r.stderr.strip()}")
    # Left mounted, as systemd mounts it on most distributions: another tracer may be using it.
    log(f"(mounted tracefs at {TRACEFS} for bpftrace)")


def only_families_config(enabled, directory):
    path = os.path.join(directory, "tailcause-" + "+".join(enabled) + ".yaml")
    with open(path, "w") as f:
        f.write("probes:\n")
        for fam in FAMILIES:
            f.write(f"  {fam}:\n    enabled: {'true' if fam in enabled else 'false'}\n")
    return path


def threads_cpu_ns(pid):
    """Time on CPU so far of all of `pid`'s threads, in ns (schedstat; /proc/PID/stat counts
    10 ms ticks, coarser than the windows the benchmarks read)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) * 1024
    return fields


def memory_breakdown(pid):
    """Where a process's resident memory is, from /proc/PID/smaps (bytes): the totals Rss, Pss,
    Private_Dirty and Anonymous, and Rss split into the BPF maps it has mapped (ring buffers,
    skeleton globals), heap and other anonymous memory (thread stacks, malloc arenas), its
    executable and the shared libraries."""
    parts = dict(Rss=0, Pss=0, Private_Dirty=0, Anonymous=0, bpf_maps=0, heap_anon=0,
                 binary=0, libraries=0)
    exe = os.path.realpath(f"/proc/{pid}/exe")
    name = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if not head:
                continue
            if not head[0].endswith(":"):  # a mapping: address range, perms, offset, dev, inode, name
                name = " ".join(head[5:]) if len(head) > 5 else ""
                continue
            key, kb = head[0][:-1], head[1] if len(head) > 1 else "0"
            if key not in ("Rss", "Pss", "Private_Dirty", "Anonymous"):
                continue
            value = int(kb) * 1024
            parts[key] += value
            if key != "Rss":
                continue
            if name == "anon_inode:bpf-map":
                parts["bpf_maps"] += value
            elif name == exe:
                parts["binary"] += value
            elif name.startswith("/"):
                parts["libraries"] += value
            else:
                parts["heap_anon"] += value
    return parts


def bpf_map_bytes(pid):
    """Kernel memory charged to the daemon's BPF maps (fdinfo memlock), which RSS does not show."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:bpf-map":
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    m = re.search(r"^memlock:\s*(\d+)", f.read(), re.M)
                total += int(m.group(1)) if m else 0
        except OSError:
            continue
    return total


def count_series(body):
    per_metric = {}
    for line in body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            name = re.split(r"[{ ]", line, 1)[0]
            per_metric[name] = per_metric.get(name, 0) + 1
    return sum(per_metric.values()), per_metric


def tracing_programs():
    """Names of the tracing BPF programs that others have loaded on the node now (their cost
    shows up in every condition, so the run says when there are any). Ours, freed a moment
    after their tracer exits, are left out by id."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    kinds = {"tracing", "raw_tracepoint", "tracepoint", "perf_event", "kprobe"}
    return {p.get("name", "?") for p in json.loads(out or "[]")
            if p.get("type") in kinds and p.get("id") not in own_programs}


def enable_bpf_stats():
    """Turns on the kernel's per-program run time, remembering the value to restore."""
    global saved_bpf_stats
    with open(BPF_STATS) as f:
        saved_bpf_stats = f.read().strip()
    set_bpf_stats("1")


def restore_bpf_stats():
    global saved_bpf_stats
    if saved_bpf_stats is not None:
        set_bpf_stats(saved_bpf_stats)
        saved_bpf_stats = None


def set_bpf_stats(value):
    with open(BPF_STATS, "w") as f:
        f.write(value)


def prog_stats(pid):
    """{BPF program id: (run_time_ns, run_cnt)} of the programs a process holds (fdinfo)."""
    stats = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:bpf-prog":
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(re.findall(r"^(\w+):\s*(\S+)", f.read(), re.M))
                stats[int(info["prog_id"])] = (int(info["run_time_ns"]), int(info["run_cnt"]))
        except (OSError, KeyError):
            continue
    return stats


def program_name(prog_id):
    out = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                         capture_output=True, text=True).stdout
    return f"{json.loads(out).get('name', '?') if out else '?'} (id {prog_id})"
