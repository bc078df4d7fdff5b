# SPDX-License-Identifier: Apache-2.0
"""One tenant of the Python agent: its index, models, retrieval cache and the six stages of a
request under the SDK's Request/Stage context managers; run_tenant() is the tenant process's
open-loop load (Poisson arrivals, worker threads, a helper thread per worker for retrieval)."""

import collections
import concurrent.futures
import http.client
import json
import math
import os
import queue
import random
import resource
import sys
import threading
import time
import urllib.parse

import numpy as np

import tailcause
from rag_index import VectorIndex
from rag_model import WORDS, Model, Tokenizer

AGENT = "rag-agent-py"
OUTPUT_TOKENS = 24
NPROBE = 4
TOP_K = 8
CACHE_ENTRIES = 64
CACHE_TTL_S = 5.0
STAGES = ("prompt", "embedding", "retrieval", "generation", "tool", "response")


class Series:
    def __init__(self):
        self.samples, self.errors = [], 0

    def summary(self):
        s = sorted(self.samples)
        pct = (lambda p: s[min(len(s), max(1, math.ceil(p * len(s)))) - 1]) if s else (lambda p: 0.0)
        return {"count": len(s), "errors": self.errors, "p50_seconds": pct(0.5), "p99_seconds": pct(0.99),
                "max_seconds": s[-1] if s else 0.0, "mean_seconds": sum(s) / len(s) if s else 0.0}


class Tenant:
    def __init__(self, args, name, tool_port):
        self.name, self.args, self.tool_port = name, args, tool_port
        self.faults = {k for k, t in args.faults if t == name}
        seed = int.from_bytes(name.encode(), "little") * 7919 + 17
        self.index = VectorIndex(os.path.join(args.data_dir, f"pyindex-{name}.f32"))
        self.model = Model(seed, self.index.dim)
        self.tokenizer = Tokenizer()
        rng = random.Random(seed)
        verbs, nouns, states = WORDS[23:39], WORDS[39:55], WORDS[55:67]
        self.questions = [f"how do i {rng.choice(verbs)} the {rng.choice(nouns)} when the "
                          f"{rng.choice(nouns)} is {rng.choice(states)}?" for _ in range(200)]
        self.cache = collections.OrderedDict()  # key -> (stored_at, docs), LRU order
        self.lock = threading.Lock()
        self.kv_lock = threading.Lock()
        self.series = collections.defaultdict(Series)
        self.counts = collections.Counter()

    def record(self, name, seconds=None):
        with self.lock:
            if seconds is None:
                self.series[name].errors += 1
            else:
                self.series[name].samples.append(seconds)

    def retrieve(self, request, helper, query, key):
        if "cold-cache" in self.faults:
            self.index.drop_page_cache()
        with self.lock:
            entry = self.cache.get(key)
            if entry:
                self.cache.move_to_end(key)
        age = time.monotonic() - entry[0] if entry else 0.0
        result = "miss" if entry is None else ("stale" if age > CACHE_TTL_S else "hit")
        tailcause.cache_lookup(request, "retrieval", result, int(age * 1e9), key)
        with self.lock:
            self.counts["cache_" + result] += 1
        if result == "hit":
            return entry[1]
        lists = self.index.closest_lists(query, NPROBE)

        def helper_half():
            with tailcause.context_scope(request):
                return self.index.scan(query, lists[1::2], TOP_K)

        theirs = helper.submit(helper_half)
        docs = sorted(self.index.scan(query, lists[0::2], TOP_K) + theirs.result(), reverse=True)[:TOP_K]
        with self.lock:
            self.cache[key] = (time.monotonic(), docs)
            self.cache.move_to_end(key)
            while len(self.cache) > CACHE_ENTRIES:
                self.cache.popitem(last=False)
        return docs

    def call_tool(self, question):
        delay = 300 if "slow-peer" in self.faults else 0
        qs = urllib.parse.urlencode({"tenant": self.name, "q": question, "delay_ms": delay})
        conn = http.client.HTTPConnection("127.0.0.1", self.tool_port, timeout=10)
        try:
            conn.request("GET", "/tool?" + qs)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"tool answered HTTP {resp.status}")
            return json.loads(body)
        finally:
            conn.close()

    def serve(self, helper, question_no, rng):
        question = self.questions[question_no]
        stage_no = 0
        with tailcause.Request(self.name, AGENT, trace_id=tailcause.new_trace_id()) as request:
            def stage(kind, body):
                nonlocal stage_no
                stage_no = kind
                t0 = time.monotonic()
                with tailcause.Stage(request, kind):
                    try:
                        value = body()
                    except Exception:
                        self.record(STAGES[kind])
                        raise
                self.record(STAGES[kind], time.monotonic() - t0)
                return value

            try:
                prompt = (f"System: You are a helpful assistant for tenant {self.name}. Answer using the "
                          f"retrieved passages and cite them.\nQuestion: {question}\nPlease explain the "
                          "steps with an example, in detail.")
                tokens, key = stage(tailcause.Stage.PROMPT, lambda: (
                    self.tokenizer.encode(prompt),
                    hash(tuple(self.tokenizer.encode(question))) & ((1 << 64) - 1)))
                emb = stage(tailcause.Stage.EMBEDDING, lambda: self.model.embed(tokens))

                def retrieval():
                    q = self.model.projection @ emb
                    return self.retrieve(request, helper, (q / (np.linalg.norm(q) + 1e-12)).astype(np.float32), key)
                docs = stage(tailcause.Stage.RETRIEVAL, retrieval)
                context = emb * 0.5 + 0.01 * sum(score for score, _ in docs)
                out, entropy = stage(tailcause.Stage.GENERATION, lambda: self.model.generate(
                    request, context.astype(np.float32), OUTPUT_TOKENS, rng, self.kv_lock))
                tool = stage(tailcause.Stage.TOOL, lambda: self.call_tool(question))
                stage(tailcause.Stage.RESPONSE, lambda: json.dumps({
                    "tenant": self.name,
                    "answer": " ".join(self.tokenizer.pieces[t % len(self.tokenizer.pieces)] for t in out),
                    "citations": [row for _, row in docs], "record": tool.get("record"),
                    "entropy": round(entropy, 4)}))
                return True
            except Exception as err:  # counted in the stage; the request ends with an error status
                request.end(1 + stage_no)
                with self.lock:
                    self.counts["failed"] += 1
                    if self.counts["failed"] <= 5:
                        print(f"[tenant {self.name}] request failed in {STAGES[stage_no]}: {err}",
                              file=sys.stderr)
                return False


def run_tenant(args, name, tool_port, stop):
    tenant = Tenant(args, name, tool_port)
    pending = queue.Queue()
    closing = threading.Event()
    if "lock" in tenant.faults:
        def compactor():  # holds the KV-cache lock 25 ms of every 28 ms
            while not closing.is_set():
                with tenant.kv_lock:
                    time.sleep(0.025)
                time.sleep(0.003)
        threading.Thread(target=compactor, daemon=True).start()

    def worker(seed):
        rng = np.random.default_rng(seed)
        with concurrent.futures.ThreadPoolExecutor(1) as helper:
            while not closing.is_set():
                try:
                    arrival, q = pending.get(timeout=0.05)
                except queue.Empty:
                    continue
                start = time.monotonic()
                if tenant.serve(helper, q, rng):
                    end = time.monotonic()
                    tenant.record("queue", start - arrival)
                    tenant.record("request", end - arrival)
                    with tenant.lock:
                        tenant.counts["completed"] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.concurrency)]
    for t in threads:
        t.start()
    rng = random.Random(name)
    weights = [1.0 / (i + 1) for i in range(len(tenant.questions))]  # Zipf: some questions recur
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    deadline, next_at, offered = t0 + args.duration, t0, 0
    while not stop.is_set() and time.monotonic() < deadline:
        now = time.monotonic()
        if now >= next_at:
            offered += 1
            pending.put((next_at, rng.choices(range(len(weights)), weights)[0]))
            next_at += rng.expovariate(args.rate)
            continue
        time.sleep(max(0.0, min(0.05, min(next_at, deadline) - now)))  # a stop is seen within 50 ms
    closing.set()
    for t in threads:
        t.join()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    done = tenant.counts["completed"]
    return {"tenant": name, "pid": os.getpid(), "interrupted": stop.is_set(),
            "wall_seconds": time.monotonic() - t0,
            "requests": {"offered": offered, "completed": done, "failed": tenant.counts["failed"],
                         "dropped": 0, "abandoned": pending.qsize()},
            "stages": {k: s.summary() for k, s in tenant.series.items()},
            "cache": {r: tenant.counts["cache_" + r] for r in ("hit", "miss", "stale")},
            "cpu_seconds": cpu, "cpu_seconds_per_request": cpu / done if done else 0.0}
