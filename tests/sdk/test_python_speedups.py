# SPDX-License-Identifier: Apache-2.0
"""tailcause._speedups (sdk/python/tailcause/_speedups.c), without root: that the package finds
it beside the library and falls back to ctypes when told to, that its probe calls refuse bad
arguments as clearly as ctypes does, and that ModuleCall sends a thread's outermost call to the
hook and the calls inside it straight to the original, and that RequestIds makes the Python
generator's ids. That the probes it calls fire with the
right arguments is shown by bpftrace in tests/sdk/test_usdt.sh (sections B and C, one per path).

Run by ctest with TAILCAUSE_SDK_LIB, PYTHONPATH and TAILCAUSE_SPEEDUPS_BUILT set
(sdk/CMakeLists.txt); TAILCAUSE_SPEEDUPS_BUILT=1 means the build made the extension, so it must
be found."""

import importlib.machinery
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

import tailcause
from tailcause import _native

BUILT = os.environ.get("TAILCAUSE_SPEEDUPS_BUILT") == "1"


def probes_kind(extra_env):
    """The class name of tailcause._native.probes in a fresh interpreter with `extra_env`."""
    out = subprocess.run(
        [sys.executable, "-c", "import tailcause._native as n; print(type(n.probes).__name__)"],
        capture_output=True, text=True, timeout=60, env={**os.environ, **extra_env})
    if out.returncode:
        raise AssertionError(out.stderr)
    return out.stdout.strip()


class Loading(unittest.TestCase):
    def test_the_built_extension_is_found_beside_the_library(self):
        if not BUILT:
            self.skipTest("the build has no _speedups (python3-dev missing)")
        self.assertIsNotNone(_native.speedups)
        self.assertEqual(Path(_native.speedups.__file__).parent,
                         Path(_native.library_path).resolve().parent)
        self.assertEqual(type(_native.probes).__name__, "Probes")

    def test_pure_python_forces_ctypes(self):
        self.assertEqual(probes_kind({"TAILCAUSE_SDK_PURE_PYTHON": "1"}), "_CtypesProbes")

    def test_a_library_without_an_extension_beside_it_uses_ctypes(self):
        # The library copied alone to a fresh directory: nothing to find beside it.
        with tempfile.TemporaryDirectory() as d:
            lib = shutil.copy(_native.library_path, d)
            self.assertEqual(probes_kind({"TAILCAUSE_SDK_LIB": lib}), "_CtypesProbes")

    def test_an_extension_that_cannot_be_loaded_warns_and_uses_ctypes(self):
        with tempfile.TemporaryDirectory() as d:
            lib = shutil.copy(_native.library_path, d)
            broken = Path(d) / ("_speedups" + importlib.machinery.EXTENSION_SUFFIXES[0])
            broken.write_bytes(b"not an ELF file")
            out = subprocess.run(
                [sys.executable, "-W", "always", "-c",
                 "import tailcause._native as n; print(type(n.probes).__name__)"],
                capture_output=True, text=True, timeout=60,
                env={**os.environ, "TAILCAUSE_SDK_LIB": lib})
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), "_CtypesProbes")
            self.assertIn(f"{broken} cannot be loaded", out.stderr)
            self.assertIn("probes are called through ctypes", out.stderr)

    def test_a_library_found_by_the_system_loader_is_not_looked_beside_in_the_working_dir(self):
        # The package alone (no library in or above it), the library only on LD_LIBRARY_PATH and
        # no gcc/ld on PATH for ctypes.util.find_library: it is loaded by its bare name. A file
        # named like the extension in the working directory must not be taken for it.
        with tempfile.TemporaryDirectory() as d:
            pkg, libdir, cwd = Path(d) / "pkg", Path(d) / "lib", Path(d) / "cwd"
            shutil.copytree(Path(tailcause.__file__).parent, pkg / "tailcause",
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            libdir.mkdir()
            shutil.copy(_native.library_path, libdir / _native.LIBRARY_NAME)
            cwd.mkdir()
            (cwd / ("_speedups" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"junk")
            env = {k: v for k, v in os.environ.items() if k != "TAILCAUSE_SDK_LIB"}
            env.update(PYTHONPATH=str(pkg), LD_LIBRARY_PATH=str(libdir), PATH="")
            out = subprocess.run(
                [sys.executable, "-W", "error", "-c",
                 "import tailcause._native as n; print(n.library_path, type(n.probes).__name__)"],
                capture_output=True, text=True, timeout=60, env=env, cwd=cwd)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.split(), [_native.LIBRARY_NAME, "_CtypesProbes"])


@unittest.skipUnless(BUILT, "the build has no _speedups (python3-dev missing)")
class ProbeArguments(unittest.TestCase):
    """Inputs are checked in Python first (test_python_sdk.py); these are the C side's own
    refusals, for a caller that skips those checks."""

    def setUp(self):
        self.p = _native.probes

    def test_every_probe_of_the_package_is_there(self):
        for name in tailcause.PROBES:
            self.assertTrue(callable(getattr(self.p, name)), name)

    def test_valid_calls_return_none(self):
        # Untraced: the library's semaphores are zero, so each call returns at once.
        self.assertIsNone(self.p.request_begin(1, b"t", b"a", None))
        self.assertIsNone(self.p.request_begin(1, b"t", b"a", b"0" * 31 + b"1"))
        self.assertIsNone(self.p.stage_begin(1, 2, b"retrieval"))
        self.assertIsNone(self.p.stage_end(1, 2))
        self.assertIsNone(self.p.cache_lookup(1, b"c", 0, 5, (1 << 64) - 1))
        self.assertIsNone(self.p.request_end(1, -(1 << 63)))
        for name in ("context_attach", "context_detach"):
            self.assertIsNone(getattr(self.p, name)(7))
        for name in ("token", "layer_begin", "layer_end", "output_quality"):
            self.assertIsNone(getattr(self.p, name)(7, 8))

    def test_wrong_argument_counts(self):
        with self.assertRaisesRegex(TypeError, "stage_end takes 2 arguments, got 1"):
            self.p.stage_end(1)
        with self.assertRaisesRegex(TypeError, "request_begin takes 4 arguments, got 3"):
            self.p.request_begin(1, b"t", b"a")
        with self.assertRaises(TypeError):
            self.p.token(1, 2, kw=3)

    def test_strings_must_be_bytes(self):
        with self.assertRaisesRegex(TypeError, "expected bytes, not str"):
            self.p.stage_begin(1, 2, "retrieval")
        with self.assertRaisesRegex(TypeError, "expected bytes, not NoneType"):
            self.p.request_begin(1, None, b"a", None)  # only the trace id may be None
        with self.assertRaisesRegex(ValueError, "contains a NUL byte"):
            self.p.cache_lookup(1, b"vec\0tors", 0, 0, 0)

    def test_integers_out_of_range(self):
        with self.assertRaises(OverflowError):
            self.p.stage_end(-1, 0)
        with self.assertRaises(OverflowError):
            self.p.stage_end(1 << 64, 0)
        with self.assertRaises(OverflowError):
            self.p.request_end(1, 1 << 63)
        with self.assertRaises(TypeError):
            self.p.token(1.5, 0)

    def test_bad_addresses(self):
        with self.assertRaisesRegex(KeyError, "no address for probe request_begin"):
            _native.speedups.Probes({})
        addresses = _native.probe_addresses()
        with self.assertRaisesRegex(ValueError, "null address for probe token"):
            _native.speedups.Probes({**addresses, "token": 0})
        with self.assertRaises(TypeError):
            _native.speedups.Probes([])
        with self.assertRaises(TypeError):
            _native.speedups.Probes(addresses=addresses)
        with self.assertRaises(TypeError):
            _native.speedups.Probes.__new__(_native.speedups.Probes)  # never without addresses


@unittest.skipUnless(BUILT, "the build has no _speedups (python3-dev missing)")
class RequestIds(unittest.TestCase):
    """The C request ids: the Python generator's sequence, without its lock."""

    def test_the_same_ids_as_the_python_generator(self):
        salt = 0x0123456789ABCDEF
        ids = _native.speedups.RequestIds(salt)
        want = [tailcause._mix64((salt + n) & tailcause._MASK64) for n in range(1000)]
        self.assertEqual([ids() for _ in range(1000)], want)
        self.assertIs(tailcause._next_request_id.__class__, _native.speedups.RequestIds)
        self.assertEqual(len({tailcause.new_request_id() for _ in range(10000)}), 10000)

    def test_zero_is_skipped(self):
        # mix64 is a bijection with mix64(0) == 0: the salt that makes the first input 0.
        ids = _native.speedups.RequestIds(0)
        self.assertEqual(ids(), tailcause._mix64(1))

    def test_bad_arguments(self):
        with self.assertRaises(TypeError):
            _native.speedups.RequestIds()
        with self.assertRaises(TypeError):
            _native.speedups.RequestIds("1")
        with self.assertRaises(TypeError):
            _native.speedups.RequestIds(salt=1)
        ids = _native.speedups.RequestIds(1)
        with self.assertRaisesRegex(TypeError, "takes 0 arguments, got 1"):
            ids(1)
        with self.assertRaises(TypeError):
            ids(n=1)

    def test_pure_python_uses_the_python_generator(self):
        out = subprocess.run(
            [sys.executable, "-c", "import tailcause; print(tailcause._next_request_id.__name__)"],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "TAILCAUSE_SDK_PURE_PYTHON": "1"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "_python_request_id")


@unittest.skipUnless(BUILT, "the build has no _speedups (python3-dev missing)")
class ModuleCallRouting(unittest.TestCase):
    """ModuleCall as a class's __call__, as the torch hook installs it on nn.Module."""

    def setUp(self):
        self.log = []
        log = self.log

        def original(module, *args, **kwargs):
            log.append(("original", module.name, args, kwargs))
            return module.forward(*args, **kwargs)

        def outer(module, *args, **kwargs):
            log.append(("outer", module.name))
            return original(module, *args, **kwargs)

        class Module:
            __call__ = _native.speedups.ModuleCall(original, outer)

            def __init__(self, name, inner=None, fail=False):
                self.name, self.inner, self.fail = name, inner, fail

            def forward(self, x, scale=1):
                if self.fail:
                    raise RuntimeError("forward failed")
                return self.inner(x, scale=scale) + 1 if self.inner else x * scale

        self.Module = Module

    def test_the_outermost_call_goes_to_the_hook_the_inner_ones_straight_through(self):
        model = self.Module("outer", self.Module("middle", self.Module("leaf")))
        self.assertEqual(model(3, scale=2), 8)
        self.assertEqual(self.log, [
            ("outer", "outer"), ("original", "outer", (3,), {"scale": 2}),
            ("original", "middle", (3,), {"scale": 2}), ("original", "leaf", (3,), {"scale": 2})])
        self.log.clear()
        model(1)  # the next outermost call reaches the hook again
        self.assertEqual(self.log[0], ("outer", "outer"))

    def test_an_exception_leaves_the_next_call_outermost(self):
        broken = self.Module("outer", self.Module("leaf", fail=True))
        with self.assertRaisesRegex(RuntimeError, "forward failed"):
            broken(1)
        self.log.clear()
        self.Module("again")(1)
        self.assertEqual(self.log[0], ("outer", "again"))

    def test_each_thread_has_its_own_outermost_call(self):
        inside, release = threading.Event(), threading.Event()

        class Blocking(self.Module):
            def forward(self, x, scale=1):
                inside.set()
                release.wait(30)
                return x

        t = threading.Thread(target=lambda: Blocking("a")(1))
        t.start()
        self.assertTrue(inside.wait(30))
        self.Module("b")(1)  # while thread a is inside its outermost call
        release.set()
        t.join(30)
        self.assertIn(("outer", "a"), self.log)
        self.assertIn(("outer", "b"), self.log)

    def test_it_binds_and_introspects_like_the_function_it_wraps(self):
        wrapper = self.Module.__dict__["__call__"]
        m = self.Module("m")
        self.assertIs(m.__call__.__self__, m)
        self.assertEqual(m.__call__(2), 2)
        self.assertIs(self.Module.__call__, wrapper)
        self.assertTrue(wrapper.__tailcause_wrapped__)
        self.assertEqual(wrapper.__wrapped__.__name__, "original")
        self.assertEqual(wrapper.__name__, "original")
        self.assertIn("original", wrapper.__qualname__)
        import inspect
        self.assertEqual(str(inspect.signature(wrapper)), "(module, *args, **kwargs)")

    def test_construction_needs_two_callables(self):
        with self.assertRaisesRegex(TypeError, "takes callables"):
            _native.speedups.ModuleCall(1, print)
        with self.assertRaises(TypeError):
            _native.speedups.ModuleCall(print)


@unittest.skipUnless(BUILT, "the build has no _speedups (python3-dev missing)")
class LingeringFastPath(unittest.TestCase):
    """ModuleCall(original, outer, state, on_error): an outermost call from the code that opened
    the thread's lingering stage (state.linger) skips the hook, as the torch hook would have
    done nothing but run it with state.depth 1."""

    def setUp(self):
        log = self.log = []

        class State(threading.local):
            depth = 0
            linger = None
        state = self.state = State()

        def original(module, x):
            log.append(("original", module.name, state.depth))
            if module.fail:
                raise RuntimeError("forward failed")
            return x

        def outer(module, x):  # the hook: the caller's code opens the lingering stage
            log.append(("outer", module.name))
            state.linger = ("stage", sys._getframe(1).f_code)
            state.depth = 1
            try:
                return original(module, x)
            finally:
                state.depth = 0

        def on_error():
            log.append(("on_error",))
            state.linger = None

        class Module:
            __call__ = _native.speedups.ModuleCall(original, outer, state, on_error)

            def __init__(self, name, fail=False):
                self.name, self.fail = name, fail

        self.Module = Module

    def test_the_calls_after_the_first_from_the_same_code_skip_the_hook(self):
        m = self.Module("m")

        def loop():
            for i in range(3):
                m(i)

        loop()
        self.assertEqual(self.log, [("outer", "m"), ("original", "m", 1), ("original", "m", 1),
                                    ("original", "m", 1)])
        self.assertEqual(self.state.depth, 0)
        self.log.clear()
        m(0)  # from another function: the hook again
        self.assertEqual(self.log, [("outer", "m"), ("original", "m", 1)])

    def test_inside_a_stage_or_after_it_ended_the_hook_decides(self):
        m = self.Module("m")

        def call():
            return m(1)

        call()
        self.state.depth = 1  # another stage is open (a wrapped library call): not lingering
        self.log.clear()
        call()
        self.assertEqual(self.log[0], ("outer", "m"))
        self.state.depth, self.state.linger = 0, None  # the stage ended
        self.log.clear()
        call()
        self.assertEqual(self.log[0], ("outer", "m"))

    def test_a_failed_call_ends_the_stage_and_keeps_its_exception(self):
        ok, bad = self.Module("ok"), self.Module("bad", fail=True)

        def call(module):
            return module(1)

        call(ok)
        self.log.clear()
        with self.assertRaisesRegex(RuntimeError, "forward failed"):
            call(bad)  # continues the stage call(ok) opened
        self.assertEqual(self.log, [("original", "bad", 1), ("on_error",)])
        self.assertEqual(self.state.depth, 0)
        self.assertIsNone(self.state.linger)

    def test_bad_arguments(self):
        f = lambda *a: None  # noqa: E731
        with self.assertRaisesRegex(TypeError, "on_error must be callable"):
            _native.speedups.ModuleCall(f, f, self.state)
        with self.assertRaisesRegex(TypeError, "on_error must be callable"):
            _native.speedups.ModuleCall(f, f, self.state, 1)
        with self.assertRaises(TypeError):
            _native.speedups.ModuleCall(f, f, self.state, f, f)


if __name__ == "__main__":
    unittest.main()
