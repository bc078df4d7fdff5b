# SPDX-License-Identifier: Apache-2.0
"""Checks bpftrace's output (probes.bt.in) against what sdk_user / py_user fire for iteration
i with request id base+i. Events of one request are compared as a multiset (bpftrace's per-CPU
buffers do not keep order); every request seen whole must match exactly, and there must be at
least --min-requests of them.

    check_events.py OUTPUT --base-id ID --agent NAME [--min-requests N]
"""

import argparse
import collections
import sys

MASK64 = (1 << 64) - 1
ALL_PROBES = {"request_begin", "request_end", "stage_begin", "stage_end", "context_attach",
              "context_detach", "cache_lookup", "token", "layer_begin", "layer_end",
              "output_quality"}


def expected_events(i, rid, agent):
    """(probe, args...) with the thread role (main / worker) instead of a tid."""
    trace = "" if i % 4 == 3 else "0af7651916cd43dd%016x" % rid
    batch = 8 + i % 4
    events = [
        ("main", "request_begin", str(rid), "tenant-%d" % (i % 3), agent, trace),
        ("main", "stage_begin", str(rid), "2", "retrieval"),
        ("main", "cache_lookup", str(rid), "vectors", str(i % 3), str(1000 * i + 7),
         str(rid * 31 & MASK64)),
        ("main", "stage_end", str(rid), "2"),
        ("main", "stage_begin", str(rid), "6", "rerank"),
        ("main", "stage_end", str(rid), "6"),
        ("worker", "context_attach", str(rid)),
        ("worker", "stage_begin", str(rid), "3", "generation"),
        ("worker", "stage_end", str(rid), "3"),
        ("worker", "context_detach", str(rid)),
        ("main", "output_quality", str(rid), str((i % 7) * 125000)),
        ("main", "request_end", str(rid), "3" if i % 5 == 0 else "0"),
    ]
    for k in range(3):
        events += [("worker", "token", str(rid), str(k)),
                   ("worker", "layer_begin", str(k), str(batch)),
                   ("worker", "layer_end", str(k), str(batch))]
    return collections.Counter(events)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--base-id", type=lambda s: int(s, 0), required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--min-requests", type=int, default=5)
    args = parser.parse_args()

    by_request = collections.defaultdict(list)  # rid -> [(tid, probe, args...)]
    layers_by_tid = collections.defaultdict(list)
    probes_seen = collections.Counter()
    lost = []
    with open(args.output, errors="replace") as f:
        for line in f:
            if line.startswith("Lost "):
                lost.append(line.strip())
            if not line.startswith("E|"):
                continue
            fields = line.rstrip("\n").split("|")[1:]
            probe, tid, rest = fields[0], int(fields[1]), fields[2:]
            probes_seen[probe] += 1
            if probe.startswith("layer_"):
                layers_by_tid[tid].append((tid, probe, *rest))
            else:
                by_request[int(rest[0])].append((tid, probe, *rest))

    # Probes attach (and detach) one by one, so the first and last requests may be partly
    # traced. Only requests inside the window where every probe was live must match: from the
    # last probe's first request to the first probe's last request, both excluded.
    worker_request = {}
    for rid, evs in by_request.items():
        for e in evs:
            if e[1] == "context_attach":
                worker_request[e[0]] = rid
    seen_ids = collections.defaultdict(list)
    for rid, evs in by_request.items():
        for e in evs:
            seen_ids[e[1]].append(rid)
    for tid, evs in layers_by_tid.items():
        if tid in worker_request:
            for e in evs:
                seen_ids[e[1]].append(worker_request[tid])
    failures = []
    missing = sorted(ALL_PROBES - set(probes_seen))
    if missing:
        failures.append(f"probes never seen: {missing}")
    whole = 0
    if not missing:
        first = max(min(v) for v in seen_ids.values())
        last = min(max(v) for v in seen_ids.values())
        # Exclusive: a probe may have attached or detached in the middle of those two.
        for rid in range(first + 1, last):
            i = rid - args.base_id
            evs = by_request.get(rid, [])
            begins = [e[0] for e in evs if e[1] == "request_begin"]
            workers = {e[0] for e in evs if e[1] == "context_attach"}
            if not 0 <= i < 1 << 32 or len(begins) != 1 or len(workers) != 1:
                failures.append(f"request {rid:#x} (i={i}) inside the window is incomplete or "
                                f"on the wrong threads: begins={begins} workers={workers}")
                continue
            main_tid, worker = begins[0], workers.pop()
            if worker == main_tid:
                failures.append(f"i={i}: context_attach on the request's own thread")
                continue
            got = collections.Counter(
                ("main" if e[0] == main_tid else "worker" if e[0] == worker else f"tid{e[0]}",)
                + e[1:] for e in evs + layers_by_tid.get(worker, []))
            want = expected_events(i, rid, args.agent)
            if got != want:
                failures.append(f"i={i}: missing {dict(want - got)}, unexpected {dict(got - want)}")
            else:
                whole += 1
    if lost:
        failures.append(f"bpftrace lost events: {lost}")

    print(f"probes seen: {dict(probes_seen)}")
    print(f"requests inside the traced window that match exactly: {whole}")
    for f in failures[:10]:
        print("MISMATCH", f)
    if failures or whole < args.min_requests:
        print(f"FAIL ({len(failures)} mismatches, need {args.min_requests} whole requests)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
