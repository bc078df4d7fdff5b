#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The daemon's own CPU at rest, and what each process on the node adds to it.

The daemon runs on every node, so its cost with nothing to trace counts, and so does how that
cost grows with the node's processes (the discovery of SDK binaries and recipe libraries looks
at them: bench/README.md, "At rest"). Two windows of WINDOW_S seconds with the daemon's default
configuration: the node as it is, then with EXTRA more processes (sleeping `sleep`s). Prints
the daemon's CPU (its threads' schedstat, in ns) per second in each and the difference per
process; never fails on a figure. Standard library only.

  bench/idle_cost.py BUILD_DIR
"""
import os
import signal
import sys
import time

from harness import (Daemon, cleanup, die, log, on_signal, spawn, stop_process,
                     threads_cpu_ns)

EXTRA = 1000
WINDOW_S = 30.0  # the discovery looks at an unreported process at least every 30 s: one of those
SETTLE_S = 5.0


def processes():
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def at_rest(daemon):
    """The daemon's CPU in microseconds per second over one window, after settling."""
    time.sleep(SETTLE_S)
    daemon.check_alive("at rest")
    c0, t0 = threads_cpu_ns(daemon.proc.pid), time.monotonic()
    time.sleep(WINDOW_S)
    daemon.check_alive("at rest")
    return (threads_cpu_ns(daemon.proc.pid) - c0) / 1e3 / (time.monotonic() - t0)


def main():
    if len(sys.argv) != 2:
        die("usage: bench/idle_cost.py BUILD_DIR")
    binary = os.path.join(sys.argv[1], "tailcause")
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    daemon = Daemon(binary)
    sleepers = None
    try:
        daemon.wait_ready()
        before, n_before = at_rest(daemon), processes()
        sleepers = spawn(["sh", "-c", f"for i in $(seq {EXTRA}); do sleep 600 & done; wait"])
        after, n_after = at_rest(daemon), processes()
    finally:
        if sleepers:
            stop_process(sleepers, signal.SIGKILL)
        daemon.stop()
        cleanup()
    per_process = (after - before) / max(1, n_after - n_before)
    log(f"daemon CPU at rest: {before:.0f} us/s with {n_before} processes, {after:.0f} us/s with "
        f"{n_after} ({after / 1e4:.2f}% of a CPU); {per_process:.2f} us a second per process")


if __name__ == "__main__":
    main()
