# SPDX-License-Identifier: Apache-2.0
"""Python binding of the tailcause vector cache (libtailcause_cache.so, the same C++ library the
C++ agents link), through its C ABI with ctypes. Vectors are numpy arrays (any float dtype,
converted to contiguous float32); values are bytes.

    cache = VectorCache(dim=256, threshold=0.95, ttl_seconds=60)
    hit = cache.lookup("tenant-a", query, request_id=rid)   # Lookup(result, value, age_ns, ...)
    if hit.result != HIT: cache.insert("tenant-a", query, b"...")

Library lookup: TAILCAUSE_CACHE_LIB (a path), the package directory, the source tree's
build/cache/, then the system loader.
"""

import ctypes
import ctypes.util
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HIT, MISS, STALE = 0, 1, 2
STORED, UPDATED, REJECTED = 0, 1, 2
LIBRARY_NAME = "libtailcause_cache.so"


class CacheError(ValueError):
    """A bad vector, tenant or option: the message says what; nothing was stored."""


def _load():
    explicit = os.environ.get("TAILCAUSE_CACHE_LIB")
    if explicit:
        return ctypes.CDLL(explicit)
    here = Path(__file__).resolve().parent
    for path in (here / LIBRARY_NAME, here.parent.parent.parent / "build" / "cache" / LIBRARY_NAME):
        if path.is_file():
            return ctypes.CDLL(str(path))
    found = ctypes.util.find_library("tailcause_cache")
    if not found:
        raise ImportError("tailcause_cache: libtailcause_cache.so not found; build the "
                          "tailcause_cache_shared target or set TAILCAUSE_CACHE_LIB")
    return ctypes.CDLL(found)


class _Options(ctypes.Structure):
    _fields_ = [("dim", ctypes.c_size_t), ("name", ctypes.c_char_p),
                ("model_version", ctypes.c_char_p), ("threshold", ctypes.c_float),
                ("ttl_seconds", ctypes.c_double), ("base_quota_bytes", ctypes.c_uint64),
                ("budget_bytes", ctypes.c_uint64), ("semantic", ctypes.c_int),
                ("admission", ctypes.c_int), ("quotas", ctypes.c_int)]


_STAT_FIELDS = ["base_quota_bytes", "quota_bytes", "usage_bytes", "entries", "competition",
                "hits", "semantic_hits", "misses", "stale", "stored", "rejected", "evicted",
                "invalidated", "warmups", "warmed_entries", "rebalances"]


class _Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_double if n == "competition" else ctypes.c_uint64)
                for n in _STAT_FIELDS]


_lib = _load()
_p = ctypes.c_void_p
_F32P = ctypes.POINTER(ctypes.c_float)
_lib.tc_cache_last_error.restype = ctypes.c_char_p
_lib.tc_cache_new.restype = _p
_lib.tc_cache_new.argtypes = [ctypes.POINTER(_Options)]
_lib.tc_cache_free.argtypes = [_p]
_lib.tc_cache_lookup.argtypes = [_p, ctypes.c_char_p, _F32P, ctypes.c_size_t, ctypes.c_uint64,
                                 ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_float)]
_lib.tc_cache_insert.argtypes = [_p, ctypes.c_char_p, _F32P, ctypes.c_size_t, ctypes.c_char_p,
                                 ctypes.c_size_t]
_lib.tc_cache_set_model_version.argtypes = [_p, ctypes.c_char_p]
_lib.tc_cache_set_base_quota.argtypes = [_p, ctypes.c_char_p, ctypes.c_uint64]
_lib.tc_cache_set_competition.argtypes = [_p, ctypes.c_char_p, ctypes.c_double]
_lib.tc_cache_rebalance.argtypes = [_p]
_lib.tc_cache_tenant_stats_get.argtypes = [_p, ctypes.c_char_p, ctypes.POINTER(_Stats)]


def _check(rc):
    if rc < 0:
        raise CacheError(_lib.tc_cache_last_error().decode(errors="replace"))
    return rc


def _vec(v):
    a = np.ascontiguousarray(v, dtype=np.float32)
    if a.ndim != 1:
        raise CacheError(f"vector must be one-dimensional, got shape {a.shape}")
    return a, a.ctypes.data_as(_F32P)


@dataclass
class Lookup:
    result: int
    value: bytes | None
    age_ns: int
    similarity: float


class VectorCache:
    def __init__(self, dim, *, name="retrieval", model_version="v1", threshold=0.95,
                 ttl_seconds=60.0, base_quota_bytes=4 << 20, budget_bytes=0, semantic=True,
                 admission=True, quotas=True):
        opts = _Options(dim, name.encode(), model_version.encode(), threshold, ttl_seconds,
                        base_quota_bytes, budget_bytes, int(semantic), int(admission), int(quotas))
        handle = _lib.tc_cache_new(ctypes.byref(opts))
        if not handle:
            raise CacheError(_lib.tc_cache_last_error().decode(errors="replace"))
        self._h = handle

    def close(self):
        if self._h:
            _lib.tc_cache_free(self._h)
            self._h = None

    __del__ = close

    def lookup(self, tenant, vector, request_id=0, max_value=1 << 20):
        a, ptr = _vec(vector)
        buf = ctypes.create_string_buffer(max_value)
        n, age, sim = ctypes.c_size_t(), ctypes.c_uint64(), ctypes.c_float()
        r = _check(_lib.tc_cache_lookup(self._h, tenant.encode(), ptr, a.size, request_id, buf,
                                        max_value, ctypes.byref(n), ctypes.byref(age),
                                        ctypes.byref(sim)))
        if r == HIT and n.value > max_value:
            return self.lookup(tenant, vector, request_id, n.value)
        return Lookup(r, buf.raw[:n.value] if r == HIT else None, age.value, sim.value)

    def insert(self, tenant, vector, value: bytes):
        a, ptr = _vec(vector)
        return _check(_lib.tc_cache_insert(self._h, tenant.encode(), ptr, a.size, value,
                                           len(value)))

    def set_model_version(self, version):
        _check(_lib.tc_cache_set_model_version(self._h, version.encode()))

    def set_base_quota(self, tenant, nbytes):
        _check(_lib.tc_cache_set_base_quota(self._h, tenant.encode(), nbytes))

    def set_competition(self, tenant, competition):
        _check(_lib.tc_cache_set_competition(self._h, tenant.encode(), float(competition)))

    def rebalance(self):
        _check(_lib.tc_cache_rebalance(self._h))

    def stats(self, tenant):
        s = _Stats()
        _check(_lib.tc_cache_tenant_stats_get(self._h, tenant.encode(), ctypes.byref(s)))
        return {n: getattr(s, n) for n in _STAT_FIELDS}
