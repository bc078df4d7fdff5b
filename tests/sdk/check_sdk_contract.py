# SPDX-License-Identifier: Apache-2.0
"""The SDK contract, Python side: the Python package's constants against the C SDK's, read as
text (sdk/include/tailcause/sdk.h, sdk_lib.h, sdk/src/breaker.c), and against the daemon's
(the stage names of src/core/record/stage_kind.h, kBreakerMaxLine of
src/core/detect/breaker_protocol.h): stage kinds and names, TAILCAUSE_STAGE_FOLLOWS, cache
results, the trace id lengths, the breaker socket's default path and its line limit. The C and
C++ sides are compared by tests/unit/test_sdk_contract.cpp.

Run by ctest (sdk_contract_python, sdk/CMakeLists.txt) under /usr/bin/python3 with PYTHONPATH
and TAILCAUSE_SDK_LIB set; by hand: python3 tests/sdk/check_sdk_contract.py."""

import re
import sys
import unittest
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "sdk" / "python"))  # by hand; PYTHONPATH names the same tree

with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # no library built: the constants suffice
    import tailcause
    from tailcause import _breaker, _validate, instrument


def text(relative):
    return (REPO / relative).read_text()


def c_enum(header, enum):
    """{NAME: value} of `enum NAME { A = 0, ... }` in a C header."""
    body = re.search(r"enum\s+" + enum + r"\s*\{(.*?)\}", header, re.S)
    if not body:
        raise AssertionError(f"enum {enum} not found")
    return {m[1]: int(m[2], 0) for m in re.finditer(r"(\w+)\s*=\s*(\w+)", body[1])}


def c_define(source, name):
    """The value of `#define NAME value`: an int, or a string literal's contents."""
    m = re.search(r"^#define[ \t]+" + name + r"[ \t]+(\"[^\"]*\"|\w+)", source, re.M)
    if not m:
        raise AssertionError(f"#define {name} not found")
    value = m[1]
    return value[1:-1] if value.startswith('"') else int(value, 0)


SDK_H = text("sdk/include/tailcause/sdk.h")
SDK_LIB_H = text("sdk/include/tailcause/sdk_lib.h")
BREAKER_C = text("sdk/src/breaker.c")


class StageKinds(unittest.TestCase):
    def test_kinds_are_the_c_headers(self):
        c_kinds = c_enum(SDK_H, "tailcause_stage")
        self.assertTrue(c_kinds)
        for c_name, value in c_kinds.items():
            py_name = c_name.removeprefix("TAILCAUSE_STAGE_")
            self.assertEqual(getattr(tailcause.Stage, py_name, None), value, c_name)
        # No kind in Python that C lacks: every int constant of Stage is one of the C enum's.
        py_kinds = {k: v for k, v in vars(tailcause.Stage).items()
                    if k.isupper() and isinstance(v, int)}
        self.assertEqual(set(py_kinds), {k.removeprefix("TAILCAUSE_STAGE_") for k in c_kinds})

    def test_names_are_the_daemons_labels(self):
        # The X-macro the daemon's stage labels derive from, in kind order.
        macro = re.search(r"#define TAILCAUSE_STAGE_KINDS\(X\)(.*?)\n\n",
                          text("src/core/record/stage_kind.h"), re.S)
        self.assertIsNotNone(macro)
        core_names = re.findall(r"X\((\w+)\)", macro[1])
        self.assertEqual(list(tailcause.Stage.NAMES), core_names)
        c_kinds = c_enum(SDK_H, "tailcause_stage")
        for c_name, value in c_kinds.items():
            self.assertEqual(core_names[value], c_name.removeprefix("TAILCAUSE_STAGE_").lower())

    def test_follows_bit(self):
        self.assertEqual(instrument._STAGE_FOLLOWS, c_define(SDK_H, "TAILCAUSE_STAGE_FOLLOWS"))
        self.assertGreater(instrument._STAGE_FOLLOWS, tailcause.Stage.OTHER)


class OtherConstants(unittest.TestCase):
    def test_cache_results(self):
        for c_name, value in c_enum(SDK_H, "tailcause_cache_result").items():
            py_name = c_name.removeprefix("TAILCAUSE_CACHE_")
            self.assertEqual(getattr(tailcause.CacheResult, py_name, None), value, c_name)

    def test_trace_id_lengths(self):
        chars = c_define(SDK_H, "TAILCAUSE_TRACE_ID_CHARS")
        parent_chars = c_define(SDK_H, "TAILCAUSE_TRACEPARENT_CHARS")
        trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        self.assertEqual(_validate.trace_id(trace[:chars]), trace[:chars])
        with self.assertRaises(ValueError):
            _validate.trace_id(trace[:chars - 1])
        parent = f"00-{trace}-00f067aa0ba902b7-01"
        self.assertEqual(len(parent), parent_chars)
        self.assertTrue(_validate.traceparent(parent))

    def test_breaker_socket_path(self):
        self.assertEqual(_breaker.DEFAULT_SOCKET,
                         c_define(SDK_LIB_H, "TAILCAUSE_SDK_BREAKER_SOCKET_DEFAULT"))

    def test_breaker_line_limit(self):
        self.assertEqual(_breaker.MAX_LINE, c_define(BREAKER_C, "BREAKER_MAX_LINE"))
        core = re.search(r"kBreakerMaxLine\s*=\s*(\d+)",
                         text("src/core/detect/breaker_protocol.h"))
        self.assertIsNotNone(core)
        self.assertEqual(_breaker.MAX_LINE, int(core[1]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
