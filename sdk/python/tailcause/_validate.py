# SPDX-License-Identifier: MIT
"""Input checks done in Python, before anything reaches the C library: a wrong type or an
out-of-range value raises here instead of being silently converted by ctypes."""

import math

U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
_HEX = frozenset("0123456789abcdef")


def u64(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"tailcause: {what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= U64_MAX:
        raise ValueError(f"tailcause: {what} must be in [0, 2**64), got {value}")
    return value


def i64(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"tailcause: {what} must be an int, not {type(value).__name__}")
    if not I64_MIN <= value <= I64_MAX:
        raise ValueError(f"tailcause: {what} must fit in a signed 64-bit integer, got {value}")
    return value


def c_string(value, what):
    """A str as UTF-8 bytes for the probe; NUL bytes would cut the C string, so they are refused."""
    if not isinstance(value, str):
        raise TypeError(f"tailcause: {what} must be a str, not {type(value).__name__}")
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as err:  # lone surrogates
        raise ValueError(f"tailcause: {what} is not valid UTF-8: {err}") from None
    if b"\0" in data:
        raise ValueError(f"tailcause: {what} contains a NUL byte")
    return data


def traceparent(value):
    """Whether `value` is a W3C traceparent the SDK passes on: version 00, exactly
    00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>, lower-case, ids not all zeros."""
    if not isinstance(value, str) or len(value) != 55 or not value.startswith("00-"):
        return False
    if value[35] != "-" or value[52] != "-":
        return False
    trace, parent, flags = value[3:35], value[36:52], value[53:55]
    if not (set(trace) | set(parent) | set(flags)) <= _HEX:
        return False
    return trace != "0" * 32 and parent != "0" * 16


def trace_id(value):
    """A W3C trace id: 32 hex digits, not all zeros; returned lower-case (None stays None).
    A valid traceparent (see traceparent()) is returned as it is."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"tailcause: trace_id must be a str, not {type(value).__name__}")
    if len(value) == 55:
        if not traceparent(value):
            raise ValueError(f"tailcause: not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, "
                             f"lower-case, ids not all zeros): {value!r}")
        return value
    lower = value.lower()
    if len(lower) != 32 or not set(lower) <= _HEX:
        raise ValueError(f"tailcause: trace_id must be 32 hex digits, got {value!r}")
    if lower == "0" * 32:
        raise ValueError("tailcause: trace_id must not be all zeros")
    return lower


def entropy_micro(entropy):
    """Entropy as the probe's unit, millionths; negative, NaN and infinite values are refused."""
    if isinstance(entropy, bool) or not isinstance(entropy, (int, float)):
        raise TypeError(f"tailcause: entropy must be a number, not {type(entropy).__name__}")
    if not math.isfinite(entropy) or entropy < 0:
        raise ValueError(f"tailcause: entropy must be finite and >= 0, got {entropy}")
    return min(round(entropy * 1_000_000), U64_MAX)
