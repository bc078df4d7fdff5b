# SPDX-License-Identifier: Apache-2.0
"""The Python agent's models: a word-piece tokenizer, an embedding MLP and a two-layer decoder with
a vocabulary head, all numpy with deterministic weights, marked with the SDK's layer, token and
output_quality probes."""

import math
import re
import zlib

import numpy as np

import tailcause

HIDDEN = 128
VOCAB = 4096


WORDS = ("how do i the a of to in on for with when is my what why which should can we you it "
         "configure restore migrate scale debug monitor secure rotate upgrade index shard replicate "
         "tune audit deploy rollback database cluster backup certificate queue gateway scheduler "
         "embedding model pipeline service volume snapshot token policy endpoint worker replica "
         "partition dashboard slow full degraded expired corrupted unreachable overloaded stale "
         "missing encrypted paused saturated system helpful assistant answer using retrieved "
         "passages cite them be concise and precise question context please explain steps example "
         "detail ing ed ion er ly ment re un s es").split()


class Tokenizer:
    def __init__(self):
        pieces = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
        pieces += WORDS + [w[:n] for w in WORDS for n in range(2, min(len(w), 5))]
        self.ids = {}
        for p in pieces:
            self.ids.setdefault(p, len(self.ids))
        self.pieces = list(self.ids)
        self.longest = max(map(len, self.pieces))

    def encode(self, text):
        out = []
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            pos = 0
            while pos < len(word):
                for n in range(min(self.longest, len(word) - pos), 0, -1):
                    if word[pos:pos + n] in self.ids or n == 1:
                        break
                out.append(self.ids.get(word[pos:pos + n], zlib.crc32(word[pos:pos + n].encode()) % VOCAB))
                pos += n
        return out


class Model:
    """Deterministic weights: an embedding MLP and a 2-layer decoder with a vocabulary head."""

    def __init__(self, seed, dim):
        rng = np.random.default_rng(seed)
        s = 1.0 / math.sqrt(HIDDEN)
        self.embeddings = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
        self.mlp1 = (s * rng.standard_normal((HIDDEN, HIDDEN))).astype(np.float32)
        self.mlp2 = (s * rng.standard_normal((HIDDEN, HIDDEN))).astype(np.float32)
        self.decoder = [(s * rng.standard_normal((HIDDEN, HIDDEN))).astype(np.float32) for _ in range(2)]
        self.output = (s * rng.standard_normal((VOCAB, HIDDEN))).astype(np.float32)
        self.projection = (s * rng.standard_normal((dim, HIDDEN))).astype(np.float32)

    def embed(self, tokens):
        x = self.embeddings[np.asarray(tokens) % VOCAB]
        pos = np.arange(len(tokens))[:, None] * (100.0 ** (-np.arange(HIDDEN) / HIDDEN))[None, :]
        x = x + 0.1 * np.sin(pos).astype(np.float32)
        y = x + np.maximum(x @ self.mlp1.T, 0) @ self.mlp2.T
        pooled = y.mean(axis=0)
        return (pooled - pooled.mean()) / (pooled.std() + 1e-5)

    def generate(self, request, context, n_tokens, rng, kv_lock):
        prev, probs = int(rng.integers(VOCAB)), None
        tokens = []
        for i in range(n_tokens):
            x = self.embeddings[prev] + context
            x = (x - x.mean()) / (x.std() + 1e-5)
            for layer, w in enumerate(self.decoder):
                with tailcause.layer(layer, 1):
                    x = x + np.tanh(w @ x)
            logits = (self.output @ x) / 0.7
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            prev = int(rng.choice(VOCAB, p=probs))
            with kv_lock:  # the KV-cache append; the lock fault holds this lock for long stretches
                pass
            tailcause.token(request, i)
            tokens.append(prev)
        entropy = float(-(probs * np.log(probs + 1e-30)).sum())
        tailcause.output_quality(request, entropy)
        return tokens, entropy
