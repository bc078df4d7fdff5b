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
_lib.tc_cache_tenants.restype = ctypes.c_int64
_lib.tc_cache_tenants.argtypes = [_p, ctypes.c_char_p, ctypes.c_size_t]
_LOADER = ctypes.CFUNCTYPE(None, _p, _p, ctypes.c_char_p, _F32P, ctypes.c_size_t, ctypes.c_size_t)
_lib.tc_cache_set_loader.argtypes = [_p, _LOADER, _p]
_lib.tc_cache_load_put.argtypes = [_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
_lib.tc_cache_warm_up.restype = ctypes.c_int64
_lib.tc_cache_warm_up.argtypes = [_p, ctypes.c_char_p]


class _Verdict(ctypes.Structure):
    _fields_ = [("tenant", ctypes.c_char_p), ("answered", ctypes.c_int), ("breakdown", ctypes.c_int),
                ("competition", ctypes.c_double), ("miss_ratio", ctypes.c_double),
                ("lookups", ctypes.c_uint64)]


_FEEDBACK_FIELDS = ["polls", "unanswered", "breakdowns", "warmups", "warmed_entries", "rebalances"]


class _FeedbackStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in _FEEDBACK_FIELDS]


_lib.tc_cache_feedback_new.restype = _p
_lib.tc_cache_feedback_new.argtypes = [_p]
_lib.tc_cache_feedback_follow.argtypes = [_p, ctypes.POINTER(_Verdict), ctypes.c_size_t]
_lib.tc_cache_feedback_stats_get.argtypes = [_p, ctypes.POINTER(_FeedbackStats)]
_lib.tc_cache_feedback_free.argtypes = [_p]


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

    def tenants(self):
        need = _check(_lib.tc_cache_tenants(self._h, None, 0))
        buf = ctypes.create_string_buffer(max(need, 1))
        _check(_lib.tc_cache_tenants(self._h, buf, need))
        return [t.decode() for t in buf.raw[:need].split(b"\0")[:-1]]

    def set_loader(self, loader):
        """`loader(tenant, vectors)` gives the values of a warm-up batch (`vectors`: an n x dim
        float32 array): a list of n bytes or None (skipped). An exception it raises skips the
        batch (and is kept in `loader_errors`). None: no loader."""
        if loader is None:
            self._loader = None
            _check(_lib.tc_cache_set_loader(self._h, _LOADER(), None))
            return

        def call(_user, load, tenant, vectors, n, dim):
            try:
                rows = np.ctypeslib.as_array(vectors, shape=(n, dim)).copy()
                values = list(loader(tenant.decode(errors="replace"), rows))
                if len(values) != n:
                    raise CacheError(f"loader gave {len(values)} values for {n} vectors")
                for i, value in enumerate(values):
                    if value is not None:
                        _check(_lib.tc_cache_load_put(load, i, bytes(value), len(value)))
            except Exception as err:  # a callback must not raise into C
                self.loader_errors.append(err)

        self.loader_errors = []
        self._loader = _LOADER(call)  # kept alive as long as the cache may call it
        _check(_lib.tc_cache_set_loader(self._h, self._loader, None))

    def warm_up(self, tenant):
        """Warms `tenant` up from its recorded query patterns now; returns the entries loaded."""
        return _check(_lib.tc_cache_warm_up(self._h, tenant.encode()))


class CacheFeedback:
    """The closed loop in Python: each poll() asks the tailcause daemon for its verdict on every
    tenant of `cache` (tailcause.cache_state, the SDK's socket client: breakdown or healthy, and
    the competition index) and the library follows it as the C++ CacheFeedback does: a tenant
    whose breakdown began is warmed up (set_loader first), competition indexes set the quotas.
    `source(tenant, cache_name)` replaces the daemon (a CacheState, or None: no answer).
    Call poll() from a timer, every second or so."""

    def __init__(self, cache, cache_name="retrieval", source=None, socket_path=None):
        self._cache = cache
        self._name = cache_name
        if source is None:
            import tailcause  # the SDK's Python package: only this class needs it

            def source(tenant, name):
                try:
                    return tailcause.cache_state(tenant, name, socket_path=socket_path)
                except tailcause.BreakerUnavailable:
                    return None
        self._source = source
        handle = _lib.tc_cache_feedback_new(cache._h)
        if not handle:
            raise CacheError(_lib.tc_cache_last_error().decode(errors="replace"))
        self._h = handle

    def close(self):
        if self._h:
            _lib.tc_cache_feedback_free(self._h)
            self._h = None

    __del__ = close

    def poll(self):
        names = self._cache.tenants()
        verdicts = (_Verdict * max(len(names), 1))()
        for i, tenant in enumerate(names):
            v = self._source(tenant, self._name)
            verdicts[i].tenant = tenant.encode()
            if v is not None:
                verdicts[i].answered = 1
                verdicts[i].breakdown = int(v.state == "breakdown")
                verdicts[i].competition = float(v.competition)
                verdicts[i].miss_ratio = float(v.miss_ratio)
                verdicts[i].lookups = int(v.lookups)
        _check(_lib.tc_cache_feedback_follow(self._h, verdicts, len(names)))

    def stats(self):
        s = _FeedbackStats()
        _check(_lib.tc_cache_feedback_stats_get(self._h, ctypes.byref(s)))
        return {n: getattr(s, n) for n in _FEEDBACK_FIELDS}
