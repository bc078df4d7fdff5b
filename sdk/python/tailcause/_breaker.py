# SPDX-License-Identifier: MIT
"""The daemon's circuit breaker for one (tenant, agent), and its verdict on one (tenant, cache),
read over its local socket (pure Python, no ctypes): an agent sheds or slows its load while its
breaker is open; a cache library warms up and resizes quotas from the cache verdict.

Protocol (src/core/detect/breaker_protocol.h): "state TENANT AGENT\\n" with percent-encoded fields,
answered "ok closed|open consecutive=N retry_after_ms=M\\n"; "cache TENANT CACHE\\n", answered
"ok healthy|breakdown competition_permille=C miss_permille=R lookups=N\\n"."""

import collections
import os
import re
import socket
import time

from . import _validate as _check

DEFAULT_SOCKET = "/run/tailcause/breaker.sock"
DEFAULT_TIMEOUT = 0.1  # seconds: an agent must never hang on its breaker
MAX_LINE = 512  # bytes of a request or reply line, "\n" included

_STATE_REPLY = re.compile(rb"ok (closed|open) consecutive=(\d+) retry_after_ms=(\d+)")
_CACHE_REPLY = re.compile(
    rb"ok (healthy|breakdown) competition_permille=(\d+) miss_permille=(\d+) lookups=(\d+)")

CacheState = collections.namedtuple("CacheState", "state competition miss_ratio lookups")
CacheState.__doc__ = """The daemon's verdict on one (tenant, cache) over its breakdown window:
state "healthy" | "breakdown", competition index and miss ratio in [0, 1], lookups seen
(0: the daemon has not seen this pair in its window)."""


class BreakerUnavailable(ConnectionError):
    """No daemon answered on the breaker socket (missing, refused, not permitted, too slow or
    too busy): carry on as if the breaker were closed, or retry later."""


class BreakerProtocolError(RuntimeError):
    """The breaker socket answered something that is not a state reply."""


def _encode(data):
    """Percent-encodes everything but printable ASCII other than '%'; empty is "%"."""
    if not data:
        return "%"
    return "".join(chr(b) if 0x20 < b < 0x7F and b != 0x25 else f"%{b:02X}" for b in data)


def _exchange(path, request, timeout):
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        send_error = None
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError) as err:
            # A daemon with too many clients says "error busy" and closes, maybe before the
            # request arrived: its line may still be there to read.
            send_error = err
        reply = b""
        while b"\n" not in reply:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply in time")
            sock.settimeout(left)
            chunk = sock.recv(MAX_LINE)
            if not chunk and send_error:
                raise send_error
            if not chunk:
                raise BreakerProtocolError(
                    f"tailcause: the breaker socket {path!r} closed before a whole reply line "
                    f"(got {reply[:80]!r})")
            reply += chunk
            if len(reply) >= MAX_LINE and b"\n" not in reply:
                raise BreakerProtocolError(
                    f"tailcause: the breaker socket {path!r} sent a line longer than {MAX_LINE} bytes")
        return reply.split(b"\n", 1)[0]


def _ask(command, a, a_name, b, b_name, socket_path, timeout):
    """Checks the arguments, sends "COMMAND A B" (encoded) and returns (socket path, reply line);
    BreakerUnavailable when no daemon answers or it is busy."""
    a_b = _check.c_string(a, a_name)
    b_b = _check.c_string(b, b_name)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"tailcause: timeout must be a positive number of seconds, got {timeout!r}")
    path = socket_path or os.environ.get("TAILCAUSE_BREAKER_SOCKET") or DEFAULT_SOCKET
    if not isinstance(path, str):
        raise TypeError(f"tailcause: socket_path must be a str, not {type(path).__name__}")
    request = f"{command} {_encode(a_b)} {_encode(b_b)}\n".encode("ascii")
    if len(request) > MAX_LINE:
        raise ValueError(f"tailcause: {a_name} and {b_name} are too long for a request on the "
                         f"breaker socket ({len(request)} bytes encoded, at most {MAX_LINE})")
    try:
        line = _exchange(path, request, timeout)
    except OSError as err:  # FileNotFoundError, ConnectionRefusedError, PermissionError, timeouts
        raise BreakerUnavailable(
            f"tailcause: no circuit-breaker socket answers at {path!r} ({err}); is the tailcause "
            f"daemon running, with breaker.socket set to this path?") from err
    if line == b"error busy" or line.startswith(b"error busy "):
        raise BreakerUnavailable(f"tailcause: the breaker socket {path!r} is busy (too many clients)")
    return path, line


def breaker_state(tenant, agent, socket_path=None, timeout=DEFAULT_TIMEOUT):
    """The circuit breaker of (`tenant`, `agent`) as ("closed" | "open", retry_after_ms):
    retry_after_ms is how long until an open breaker may close (a further slow stage extends
    it), 0 when closed. `tenant` and `agent` are the strings given to Request().

    The socket is `socket_path`, else $TAILCAUSE_BREAKER_SOCKET, else DEFAULT_SOCKET (the
    daemon's breaker.socket). One connection per call, at most `timeout` seconds.
    Raises BreakerUnavailable when no daemon answers, BreakerProtocolError on a malformed reply,
    TypeError / ValueError on bad arguments (as Request() does)."""
    path, line = _ask("state", tenant, "tenant", agent, "agent", socket_path, timeout)
    match = _STATE_REPLY.fullmatch(line)
    if not match:
        raise BreakerProtocolError(
            f"tailcause: unexpected reply from the breaker socket {path!r}: {line[:120]!r}")
    return match.group(1).decode(), int(match.group(3))


def cache_state(tenant, cache, socket_path=None, timeout=DEFAULT_TIMEOUT):
    """The daemon's verdict on the vector cache `cache` of `tenant` (the names given to
    cache_lookup()), as a CacheState. Same socket, timeout and exceptions as breaker_state();
    an older daemon without the cache command gives BreakerProtocolError."""
    path, line = _ask("cache", tenant, "tenant", cache, "cache", socket_path, timeout)
    match = _CACHE_REPLY.fullmatch(line)
    if not match or int(match.group(2)) > 1000 or int(match.group(3)) > 1000:
        raise BreakerProtocolError(
            f"tailcause: unexpected reply from the breaker socket {path!r}: {line[:120]!r}")
    return CacheState(match.group(1).decode(), int(match.group(2)) / 1000,
                      int(match.group(3)) / 1000, int(match.group(4)))
