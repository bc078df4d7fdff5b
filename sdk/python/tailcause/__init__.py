# SPDX-License-Identifier: MIT
"""tailcause SDK for Python: marks requests, stages and inference events with the USDT probes
of libtailcause_sdk.so, so the tailcause daemon can attribute kernel time to them.

    import tailcause

    with tailcause.Request("tenant-a", "rag") as request:
        with tailcause.Stage(request, tailcause.Stage.RETRIEVAL):
            tailcause.cache_lookup(request, "vectors", tailcause.CacheResult.HIT,
                                    age_ns=1_500_000, key_hash=0x1234)
        with tailcause.Stage(request, "rerank"):      # a free-form stage
            ...

An agent can also read its circuit breaker, kept by the daemon, to shed or slow its load:

    state, retry_after_ms = tailcause.breaker_state("tenant-a", "rag")   # "closed" | "open"

and the daemon's verdict on its vector cache (breakdown, competition index), for a cache library
to warm up or resize quotas:

    verdict = tailcause.cache_state("tenant-a", "vectors")   # .state "healthy" | "breakdown"

Standard library only (ctypes; the optional C extension tailcause._speedups, where built, makes
the calls cheaper). While no tracer is attached a call checks its inputs and reads the probe's
semaphore (mapped from the library), and skips the call into the library. Inputs are checked here
(TypeError / ValueError) whether or not a tracer is attached, so tracing never changes what
the program does.
"""

import contextlib
import itertools
import secrets
import threading

from . import _validate as _check
from ._breaker import (BreakerProtocolError, BreakerUnavailable, CacheState, breaker_state,
                       cache_state)
from . import _native
from ._native import PROBES, library_path
from ._native import lib as _lib
from ._native import probes as _probes
from ._native import semaphores as _semaphores

# A semaphore per probe; each wrapper checks its inputs, then calls the library only while a
# tracer is attached (the C probe checks the same semaphore again).
_S_REQUEST_BEGIN = _semaphores["request_begin"]
_S_REQUEST_END = _semaphores["request_end"]
_S_STAGE_BEGIN = _semaphores["stage_begin"]
_S_STAGE_END = _semaphores["stage_end"]
_S_CONTEXT_ATTACH = _semaphores["context_attach"]
_S_CONTEXT_DETACH = _semaphores["context_detach"]
_S_CACHE_LOOKUP = _semaphores["cache_lookup"]
_S_TOKEN = _semaphores["token"]
_S_LAYER_BEGIN = _semaphores["layer_begin"]
_S_LAYER_END = _semaphores["layer_end"]
_S_OUTPUT_QUALITY = _semaphores["output_quality"]

__all__ = [
    "PROBES", "BreakerProtocolError", "BreakerUnavailable", "CacheResult", "CacheState", "Request",
    "Stage", "breaker_state", "cache_lookup", "cache_state", "context_scope", "enabled", "layer",
    "library_path", "new_request_id", "new_trace_id", "output_quality", "token", "valid_traceparent",
    "version",
]


def version():
    """Version of the loaded libtailcause_sdk.so."""
    return _lib.tailcause_sdk_version().decode()


def enabled(probe=None):
    """True while a tracer is attached to `probe` (a name from PROBES), or to any probe when
    None: lets callers skip costly argument preparation (an entropy over logits) otherwise."""
    if probe is None:
        return any(s.value for s in _semaphores.values())
    if probe not in _semaphores:
        raise ValueError(f"tailcause: unknown probe {probe!r}")
    return _semaphores[probe].value != 0


class CacheResult:
    """The `result` of cache_lookup (enum tailcause_cache_result)."""
    HIT = 0
    MISS = 1
    STALE = 2
    _BY_NAME = {"hit": HIT, "miss": MISS, "stale": STALE}


# ---- ids ------------------------------------------------------------------------------------

_MASK64 = (1 << 64) - 1
_id_salt = secrets.randbits(64)
_id_counter = itertools.count()
_id_lock = threading.Lock()


def _mix64(x):
    """splitmix64's finaliser: a bijection, so distinct counter values give distinct ids."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _python_request_id():
    while True:
        with _id_lock:
            n = next(_id_counter)
        rid = _mix64((_id_salt + n) & _MASK64)
        if rid:
            return rid


# The same ids from the C extension where there is one: one C call instead of a lock and three
# big-int multiplications. Between an agent's model kernels the SDK's Python runs cold, several
# times slower than in a tight loop (docs/recipes.md), so its per-request path is kept short.
_next_request_id = (_native.speedups.RequestIds(_id_salt)
                    if getattr(_native.speedups, "RequestIds", None) else _python_request_id)


def new_request_id():
    """A non-zero 64-bit request id, unique within the process (random salt + counter)."""
    return _next_request_id()


def new_trace_id():
    """A random 128-bit W3C trace id as 32 lower-case hex digits (never all zeros)."""
    while True:
        tid = secrets.token_hex(16)
        if tid != "0" * 32:
            return tid


def valid_traceparent(value):
    """Whether `value` is a W3C traceparent Request(trace_id=...) accepts (version 00,
    lower-case hex, ids not all zeros); an agent handed an invalid one should start its own trace."""
    return _check.traceparent(value)


def _request_id(request):
    """Accepts a Request or a bare request id."""
    if isinstance(request, Request):
        return request.id
    return _check.u64(request, "request id")


# Tenant and agent names as the probes' bytes, for the names seen before: an agent passes the
# same few on every request, and a dict lookup then replaces the checks' Python calls.
_c_strings = {}


def _c_string(value, what):
    """_check.c_string(value), remembered for a str (the first 1024 distinct ones)."""
    data = _check.c_string(value, what)
    if type(value) is str and len(_c_strings) < 1024:
        _c_strings[value] = data
    return data


# ---- requests and stages --------------------------------------------------------------------

class Request:
    """One agent request: request_begin when created, request_end once (end() or leaving the
    `with` block: status 0, or 1 when the block raised)."""

    __slots__ = ("id", "tenant", "agent", "trace_id", "_active")

    def __init__(self, tenant, agent, request_id=None, trace_id=None):
        """`trace_id`: the agent's trace id (32 hex digits) or its W3C traceparent header value,
        so that the daemon's request span becomes a child of the agent's current span."""
        tenant_c = _c_strings.get(tenant) if type(tenant) is str else None
        if tenant_c is None:
            tenant_c = _c_string(tenant, "tenant")
        agent_c = _c_strings.get(agent) if type(agent) is str else None
        if agent_c is None:
            agent_c = _c_string(agent, "agent")
        context = None if trace_id is None else _check.trace_id(trace_id)
        rid = _next_request_id() if request_id is None else _check.u64(request_id, "request_id")
        self.id = rid
        self.tenant = tenant
        self.agent = agent
        self.trace_id = context[3:35] if context is not None and len(context) == 55 else context
        self._active = True
        if _S_REQUEST_BEGIN.value:
            _probes.request_begin(rid, tenant_c, agent_c,
                                  None if context is None else context.encode("ascii"))

    @property
    def active(self):
        return self._active

    def end(self, status=0):
        """Ends the request with `status` (0 ok, else an error code); later calls do nothing."""
        if type(status) is not int or not _check.I64_MIN <= status <= _check.I64_MAX:
            status = _check.i64(status, "status")  # raises
        if self._active:
            self._active = False
            if _S_REQUEST_END.value:
                _probes.request_end(self.id, status)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end(0 if exc_type is None else 1)
        return False

    def __repr__(self):
        return (f"Request(id={self.id:#x}, tenant={self.tenant!r}, agent={self.agent!r}, "
                f"trace_id={self.trace_id!r}, active={self._active})")


class Stage:
    """One stage of a request: stage_begin when created, stage_end once (end() or leaving the
    `with` block). `stage` is one of the constants below, or a str naming a free-form stage."""

    PROMPT = 0
    EMBEDDING = 1
    RETRIEVAL = 2
    GENERATION = 3
    TOOL = 4
    RESPONSE = 5
    OTHER = 6
    NAMES = ("prompt", "embedding", "retrieval", "generation", "tool", "response", "other")

    __slots__ = ("request_id", "kind", "name", "_active")

    def __init__(self, request, stage, model=None, provider=None):
        """`model` (and `provider`) of a GENERATION stage: exported over OTLP as
        gen_ai.request.model and gen_ai.provider.name (sent as "provider:model", 32 bytes at
        most)."""
        rid = request.id if type(request) is Request else _request_id(request)
        if (type(stage) is int and Stage.PROMPT <= stage <= Stage.OTHER and model is None
                and provider is None):
            kind, name, name_c = stage, Stage.NAMES[stage], _STAGE_NAMES_C[stage]
        else:
            kind, name, name_c = _stage_kind_and_name(stage, model, provider)
        self.request_id = rid
        self.kind = kind
        self.name = name
        self._active = True
        if _S_STAGE_BEGIN.value:
            _probes.stage_begin(rid, kind, name_c)

    @property
    def active(self):
        return self._active

    def end(self):
        if self._active:
            self._active = False
            if _S_STAGE_END.value:
                _probes.stage_end(self.request_id, self.kind)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end()
        return False

    def __repr__(self):
        return f"Stage(request_id={self.request_id:#x}, kind={self.kind}, name={self.name!r})"


_STAGE_NAMES_C = tuple(n.encode() for n in Stage.NAMES)


def _stage_kind_and_name(stage, model, provider):
    """Stage()'s arguments checked: (kind, name, name as the probe's bytes)."""
    if isinstance(stage, str):
        kind, name = Stage.OTHER, stage
    else:
        kind = _check.i64(stage, "stage")
        if not Stage.PROMPT <= kind <= Stage.OTHER:
            raise ValueError(f"tailcause: stage must be Stage.PROMPT..Stage.OTHER, got {kind}")
        name = Stage.NAMES[kind]
    if model is not None or provider is not None:
        if kind != Stage.GENERATION or model is None:
            raise ValueError("tailcause: model (and provider) apply to Stage.GENERATION only")
        name = model if provider is None else f"{provider}:{model}"
    name_c = _check.c_string(name, "stage name")
    if not name_c:
        raise ValueError("tailcause: stage name is empty")
    return kind, name, name_c


# ---- events ---------------------------------------------------------------------------------

@contextlib.contextmanager
def context_scope(request):
    """The current thread works for `request` (a Request or id) inside the block."""
    rid = _request_id(request)
    if _S_CONTEXT_ATTACH.value:
        _probes.context_attach(rid)
    try:
        yield rid
    finally:
        if _S_CONTEXT_DETACH.value:
            _probes.context_detach(rid)


@contextlib.contextmanager
def layer(layer_index, batch_size):
    """One model layer over a batch: layer_begin / layer_end around the block."""
    index = _check.u64(layer_index, "layer")
    batch = _check.u64(batch_size, "batch_size")
    if _S_LAYER_BEGIN.value:
        _probes.layer_begin(index, batch)
    try:
        yield
    finally:
        if _S_LAYER_END.value:
            _probes.layer_end(index, batch)


def cache_lookup(request, cache, result, age_ns=0, key_hash=0):
    """A cache lookup for `request`: `result` is a CacheResult constant or "hit"/"miss"/"stale",
    `age_ns` how old the returned entry was (0 on a miss), `key_hash` a 64-bit hash of the key."""
    rid = _request_id(request)
    cache_c = _check.c_string(cache, "cache")
    if isinstance(result, str):
        if result not in CacheResult._BY_NAME:
            raise ValueError(f"tailcause: cache result must be hit, miss or stale, got {result!r}")
        result = CacheResult._BY_NAME[result]
    result = _check.i64(result, "result")
    if result not in (CacheResult.HIT, CacheResult.MISS, CacheResult.STALE):
        raise ValueError(f"tailcause: cache result must be a CacheResult, got {result}")
    age_ns = _check.u64(age_ns, "age_ns")
    key_hash = _check.u64(key_hash, "key_hash")
    if _S_CACHE_LOOKUP.value:
        _probes.cache_lookup(rid, cache_c, result, age_ns, key_hash)


def token(request, index):
    """Output token number `index` (0 = first) of `request` was emitted."""
    rid = _request_id(request)
    index = _check.u64(index, "token index")
    if _S_TOKEN.value:
        _probes.token(rid, index)


def output_quality(request, entropy):
    """Entropy of the output distribution of `request` (sent to the probe in millionths)."""
    rid = _request_id(request)
    micro = _check.entropy_micro(entropy)
    if _S_OUTPUT_QUALITY.value:
        _probes.output_quality(rid, micro)
