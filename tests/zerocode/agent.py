# SPDX-License-Identifier: Apache-2.0
"""A small RAG agent on Debian's PyTorch and FAISS, written without tailcause.

Per request: embed the query with a transformer encoder (the fused inference path of
nn.TransformerEncoderLayer), search a FAISS flat index, generate tokens with a small causal
decoder, and, when a tool URL is given, call the tool over HTTP (urllib, or requests or httpx
when --http-client says so and Debian's python3-requests / python3-httpx are there). Nothing here knows
about tailcause: the tests run it untouched under uprobe recipes and under
`tailcause instrument`.

  agent.py [--requests N | --seconds S] [--tool-url URL] [--tenant NAME] [--wait]
           [--vectors N] [--tokens N] [--http-client urllib|requests|httpx]

--wait: after start-up, print "ready PID" and wait for a line on stdin before serving (the
tests attach first). Ends with "done REQUESTS SECONDS CPU_SECONDS" on stdout (CPU: all its threads, while serving).
"""
import argparse
import os
import sys
import time
import urllib.request

import faiss
import numpy as np
import torch
from torch import nn

D = 128  # model width
V = 512  # vocabulary
DIM = 64  # embedding vector size


class Agent:
    def __init__(self, vectors, tokens, tool_url, http_client="urllib"):
        torch.manual_seed(1)
        torch.set_num_threads(1)
        self.tokens = tokens
        self.tool_url = tool_url
        self.http_client = http_client
        if http_client == "requests":
            import requests
            self.session = requests.Session()
        elif http_client == "httpx":
            import httpx
            self.session = httpx.Client(timeout=30)
        self.embed_tokens = nn.Embedding(V, D)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(D, 4, 256, batch_first=True), 2).eval()
        self.decoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(D, 4, 256, batch_first=True), 2).eval()
        self.head = nn.Linear(D, V).eval()
        rng = np.random.default_rng(1)
        self.index = faiss.IndexFlatL2(DIM)
        self.index.add(rng.standard_normal((vectors, DIM)).astype("float32"))

    def tokenize(self, text):
        return torch.tensor([[hash((text, i)) % V for i in range(32)]])

    def embed(self, text):
        with torch.inference_mode():
            hidden = self.encoder(self.embed_tokens(self.tokenize(text)))
            return hidden.mean(dim=1)[:, :DIM].contiguous().numpy()

    def retrieve(self, vector):
        _, ids = self.index.search(vector, 4)
        return [int(i) for i in ids[0]]

    def generate(self, context):
        out = [c % V for c in context]
        with torch.inference_mode():
            for _ in range(self.tokens):
                x = self.embed_tokens(torch.tensor([out[-16:]]))
                mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
                logits = self.head(self.decoder(x, mask=mask)[:, -1])
                out.append(int(logits.argmax()))
        return out[len(context):]

    def call_tool(self, tenant, tokens):
        url = f"{self.tool_url}?tenant={tenant}&q={tokens[0]}"
        if self.http_client == "requests":
            return self.session.get(url, timeout=30).content
        if self.http_client == "httpx":
            return self.session.get(url).content
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()


def handle_request(agent, tenant, query):
    """One request of the agent: the entry function `tailcause instrument` may be told about."""
    vector = agent.embed(query)
    context = agent.retrieve(vector)
    tokens = agent.generate(context)
    if agent.tool_url:
        agent.call_tool(tenant, tokens)
    return tokens


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=0)
    p.add_argument("--seconds", type=float, default=0)
    p.add_argument("--tool-url", default="")
    p.add_argument("--tenant", default=os.environ.get("AGENT_TENANT", "default"))
    p.add_argument("--wait", action="store_true")
    p.add_argument("--vectors", type=int, default=20000)
    p.add_argument("--tokens", type=int, default=4)
    p.add_argument("--http-client", choices=("urllib", "requests", "httpx"), default="urllib")
    a = p.parse_args()
    agent = Agent(a.vectors, a.tokens, a.tool_url, a.http_client)
    handle_request(agent, a.tenant, "warm-up")
    if a.wait:
        print(f"ready {os.getpid()}", flush=True)
        if not sys.stdin.readline():
            return 1
    start, cpu_start = time.monotonic(), time.process_time()
    done = 0
    while True:
        elapsed = time.monotonic() - start
        if a.requests and done >= a.requests:
            break
        if a.seconds and elapsed >= a.seconds:
            break
        if not a.requests and not a.seconds:
            break
        handle_request(agent, a.tenant, f"question {done}")
        done += 1
    print(f"done {done} {time.monotonic() - start:.3f} {time.process_time() - cpu_start:.3f}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
