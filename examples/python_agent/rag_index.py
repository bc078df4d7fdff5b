# SPDX-License-Identifier: Apache-2.0
"""IVF index files for the Python agent, in the C++ agent's layout: a 4096-byte-aligned header
(magic, dim, nlist, count, seed, centroids, list starts), then the unit vectors grouped by list.
Searches pread() the probed lists every time, so the page cache decides whether they wait."""

import os
import struct

import numpy as np

MAGIC = b"ITRAGIX1"
HEADER = struct.Struct("<8sIIQQ")


def nlist_for(count):
    return min(max(count // 800, 4), 4096)


def header_bytes(dim, nlist):
    raw = HEADER.size + nlist * dim * 4 + (nlist + 1) * 8
    return (raw + 4095) // 4096 * 4096


def ensure_index(path, count, dim, seed):
    nlist = nlist_for(count)
    size = header_bytes(dim, nlist) + count * dim * 4
    try:
        with open(path, "rb") as f:
            magic, d, n, c, s = HEADER.unpack(f.read(HEADER.size))
        if (magic, d, n, c, s) == (MAGIC, dim, nlist, count, seed) and os.path.getsize(path) == size:
            return False
    except (OSError, struct.error):
        pass
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((nlist, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    sizes = [count // nlist + (1 if c < count % nlist else 0) for c in range(nlist)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uint64)
    tmp = f"{path}.tmp.{os.getpid()}"
    means = np.zeros((nlist, dim), dtype=np.float32)
    with open(tmp, "wb") as f:
        f.seek(header_bytes(dim, nlist))
        for c, rows in enumerate(sizes):
            v = centres[c] + 0.08 * rng.standard_normal((rows, dim)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            means[c] = v.mean(axis=0)
            f.write(v.astype(np.float32).tobytes())
        means /= np.linalg.norm(means, axis=1, keepdims=True) + 1e-12
        f.seek(0)
        f.write(HEADER.pack(MAGIC, dim, nlist, count, seed) + means.tobytes() + starts.tobytes())
        f.flush()
        os.fdatasync(f.fileno())  # clean pages, so POSIX_FADV_DONTNEED can drop them
    os.rename(tmp, path)
    return True


class VectorIndex:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        magic, self.dim, self.nlist, self.count, _ = HEADER.unpack(os.pread(self.fd, HEADER.size, 0))
        if magic != MAGIC:
            raise RuntimeError(f"{path}: not an index file")
        off = HEADER.size
        self.centroids = np.frombuffer(os.pread(self.fd, self.nlist * self.dim * 4, off), np.float32)
        self.centroids = self.centroids.reshape(self.nlist, self.dim)
        off += self.nlist * self.dim * 4
        self.starts = np.frombuffer(os.pread(self.fd, (self.nlist + 1) * 8, off), np.uint64)
        self.data = header_bytes(self.dim, self.nlist)

    def closest_lists(self, query, nprobe):
        return list(np.argsort(-(self.centroids @ query))[:nprobe])

    def scan(self, query, lists, k):
        """pread()s each list (no copy kept) and returns the k best (score, row)."""
        best = []
        for lst in lists:
            first, last = int(self.starts[lst]), int(self.starts[lst + 1])
            raw = os.pread(self.fd, (last - first) * self.dim * 4, self.data + first * self.dim * 4)
            scores = np.frombuffer(raw, np.float32).reshape(-1, self.dim) @ query
            top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
            best.extend((float(scores[i]), first + int(i)) for i in top)
        return sorted(best, reverse=True)[:k]

    def drop_page_cache(self):
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
