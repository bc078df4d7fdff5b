# SPDX-License-Identifier: Apache-2.0
"""The Python twin of sdk/tests/sdk_user.cpp: calls every probe through the tailcause package
(so through libtailcause_sdk.so) with the values check_events.py expects.

    py_user.py [--iterations N (0: until killed)] [--interval-ms M] [--base-id ID]
"""

import argparse
import threading
import time

import tailcause


def one_request(i, rid):
    trace = None if i % 4 == 3 else "0af7651916cd43dd%016x" % rid
    request = tailcause.Request("tenant-%d" % (i % 3), "agent-py", request_id=rid, trace_id=trace)
    with tailcause.Stage(request, tailcause.Stage.RETRIEVAL):
        tailcause.cache_lookup(request, "vectors", i % 3, age_ns=1000 * i + 7,
                                key_hash=rid * 31 & ((1 << 64) - 1))
    with tailcause.Stage(request, "rerank"):
        pass

    def generate():  # on a worker thread that carries the request's context
        with tailcause.context_scope(request), \
                tailcause.Stage(request, tailcause.Stage.GENERATION):
            for k in range(3):
                with tailcause.layer(k, 8 + i % 4):
                    tailcause.token(request, k)

    worker = threading.Thread(target=generate)
    worker.start()
    worker.join()
    tailcause.output_quality(request, (i % 7) * 0.125)
    request.end(3 if i % 5 == 0 else 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=0)
    parser.add_argument("--interval-ms", type=int, default=20)
    parser.add_argument("--base-id", type=lambda s: int(s, 0), default=0x9E7000000000)
    args = parser.parse_args()
    print("library", tailcause.library_path, flush=True)
    # How the probes are called: Probes (tailcause._speedups) or _CtypesProbes.
    print("probes", type(tailcause._native.probes).__name__, flush=True)
    i = 0
    while args.iterations == 0 or i < args.iterations:
        one_request(i, args.base_id + i)
        mask = sum(tailcause.enabled(p) << n for n, p in enumerate(tailcause.PROBES))
        print(f"iteration {i} enabled={mask:#x}", flush=True)
        time.sleep(args.interval_ms / 1000)
        i += 1


if __name__ == "__main__":
    main()
