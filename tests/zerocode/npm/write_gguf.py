# SPDX-License-Identifier: Apache-2.0
"""Writes a small llama-architecture GGUF model with random weights (there is no model hub here).

The GGUF layout is written by hand: the format is a header, typed key/value metadata, tensor
descriptors and aligned tensor data (see ggml's docs/gguf.md), and Debian 12 packages no GGUF
writer. The vocabulary is a SentencePiece-style one (tokenizer.ggml.model "llama"): control
tokens, the 256 byte-fallback tokens and lower-case letters with and without the word marker,
so any prompt tokenizes. Output is noise; only the cost per token matters to the tests.

  write_gguf.py OUT.gguf [--embd N] [--layers N] [--ff N]
"""
import argparse
import struct

import numpy as np

ALIGN = 32
T_U32, T_I32, T_F32, T_STR, T_ARR = 4, 5, 6, 8, 9
GGML_F32 = 0


def s(text):
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def kv(key, vtype, value):
    out = s(key) + struct.pack("<I", vtype)
    if vtype == T_STR:
        return out + s(value)
    if vtype == T_U32:
        return out + struct.pack("<I", value)
    if vtype == T_F32:
        return out + struct.pack("<f", value)
    raise ValueError(vtype)


def kv_array(key, etype, values):
    out = s(key) + struct.pack("<IIQ", T_ARR, etype, len(values))
    if etype == T_STR:
        return out + b"".join(s(v) for v in values)
    fmt = {T_I32: "<i", T_F32: "<f"}[etype]
    return out + b"".join(struct.pack(fmt, v) for v in values)


def vocabulary():
    tokens, kinds = ["<unk>", "<s>", "</s>"], [2, 3, 3]  # unknown, control, control
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    kinds += [6] * 256  # byte
    letters = "abcdefghijklmnopqrstuvwxyz"
    tokens += ["\u2581"] + [c for c in letters] + ["\u2581" + c for c in letters]
    kinds += [1] * (1 + 2 * len(letters))  # normal
    scores = [0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)]
    return tokens, kinds, scores


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ff", type=int, default=768)
    ap.add_argument("--heads", type=int, default=4)
    a = ap.parse_args()
    tokens, kinds, scores = vocabulary()
    n_vocab, e, f = len(tokens), a.embd, a.ff
    meta = [
        kv("general.architecture", T_STR, "llama"),
        kv("general.name", T_STR, "tailcause-test"),
        kv("general.alignment", T_U32, ALIGN),
        kv("llama.context_length", T_U32, 2048),
        kv("llama.embedding_length", T_U32, e),
        kv("llama.block_count", T_U32, a.layers),
        kv("llama.feed_forward_length", T_U32, f),
        kv("llama.attention.head_count", T_U32, a.heads),
        kv("llama.attention.head_count_kv", T_U32, a.heads),
        kv("llama.rope.dimension_count", T_U32, e // a.heads),
        kv("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
        kv("tokenizer.ggml.model", T_STR, "llama"),
        kv_array("tokenizer.ggml.tokens", T_STR, tokens),
        kv_array("tokenizer.ggml.scores", T_F32, scores),
        kv_array("tokenizer.ggml.token_type", T_I32, kinds),
        kv("tokenizer.ggml.bos_token_id", T_U32, 1),
        kv("tokenizer.ggml.eos_token_id", T_U32, 2),
        kv("tokenizer.ggml.unknown_token_id", T_U32, 0),
    ]
    # Shapes in ggml's order: the first dimension is the row length.
    shapes = [("token_embd.weight", (e, n_vocab)), ("output_norm.weight", (e,)),
              ("output.weight", (e, n_vocab))]
    for i in range(a.layers):
        p = f"blk.{i}."
        shapes += [(p + "attn_norm.weight", (e,)), (p + "attn_q.weight", (e, e)),
                   (p + "attn_k.weight", (e, e)), (p + "attn_v.weight", (e, e)),
                   (p + "attn_output.weight", (e, e)), (p + "ffn_norm.weight", (e,)),
                   (p + "ffn_gate.weight", (e, f)), (p + "ffn_up.weight", (e, f)),
                   (p + "ffn_down.weight", (f, e))]
    rng = np.random.default_rng(1)
    infos, blobs, offset = [], [], 0
    for name, shape in shapes:
        count = int(np.prod(shape))
        data = np.ones(count, np.float32) if name.endswith("norm.weight") else \
            rng.normal(0, 0.02, count).astype(np.float32)
        infos.append(s(name) + struct.pack("<I", len(shape)) +
                     b"".join(struct.pack("<Q", d) for d in shape) +
                     struct.pack("<IQ", GGML_F32, offset))
        raw = data.tobytes()
        pad = (-len(raw)) % ALIGN
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(meta)) + b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(a.out, "wb") as out:
        out.write(head)
        for blob in blobs:
            out.write(blob)


if __name__ == "__main__":
    main()
