# SPDX-License-Identifier: Apache-2.0
"""The Python SDK without root: it loads the built library, checks input before calling it, and
its objects end once. (That the probes fire with these values is shown by test_usdt.sh.)

Run by ctest with TAILCAUSE_SDK_LIB and PYTHONPATH set (sdk/CMakeLists.txt)."""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import tailcause

PACKAGE_DIR = Path(tailcause.__file__).resolve().parent


class LibraryLookup(unittest.TestCase):
    def test_loads_the_library_named_by_the_environment(self):
        self.assertEqual(tailcause.library_path,
                         str(Path(os.environ["TAILCAUSE_SDK_LIB"]).resolve()))
        self.assertRegex(tailcause.version(), r"^\d+\.\d+\.\d+$")

    def run_python(self, code, env, cwd):
        return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=60)

    def test_a_bad_environment_path_is_a_clear_import_error(self):
        env = dict(os.environ, TAILCAUSE_SDK_LIB="/nonexistent/libtailcause_sdk.so")
        done = self.run_python("import tailcause", env, "/")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("ImportError", done.stderr)
        self.assertIn("TAILCAUSE_SDK_LIB", done.stderr)

    def test_falls_back_to_a_library_next_to_the_package(self):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "tailcause"
            shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(os.environ["TAILCAUSE_SDK_LIB"], copy / "libtailcause_sdk.so")
            env = {k: v for k, v in os.environ.items() if k != "TAILCAUSE_SDK_LIB"}
            env["PYTHONPATH"] = tmp
            done = self.run_python("import tailcause; print(tailcause.library_path)", env, "/")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.strip(), str(copy / "libtailcause_sdk.so"))


class InputChecks(unittest.TestCase):
    def test_strings_must_be_str_without_nul(self):
        with self.assertRaises(TypeError):
            tailcause.Request(b"tenant", "agent")
        with self.assertRaises(TypeError):
            tailcause.Request("tenant", None)
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.Request("ten\0ant", "agent")
        with self.assertRaisesRegex(ValueError, "UTF-8"):
            tailcause.Request("tenant\udc80", "agent")
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.cache_lookup(1, "vec\0tors", tailcause.CacheResult.HIT)
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.Stage(1, "re\0rank")

    def test_a_name_checked_once_does_not_let_a_bad_one_through(self):
        # Names that passed the checks are remembered (tailcause._c_strings); the next bad one
        # must still be refused, str subclasses and all.
        tailcause.Request("tenant", "agent").end()
        self.assertIn("tenant", tailcause._c_strings)

        class Name(str):
            pass
        tailcause.Request(Name("tenant"), "agent").end()
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.Request(Name("ten\0ant"), "agent")
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.Request("tenant", "age\0nt")
        with self.assertRaises(TypeError):
            tailcause.Request(["tenant"], "agent")  # unhashable: a TypeError of the checks
        # Bounded: an agent with a new tenant per request keeps 1024 at most.
        for i in range(2000):
            tailcause.Request(f"tenant-{i}", "agent").end()
        self.assertLessEqual(len(tailcause._c_strings), 1024)

    def test_non_ascii_names_are_accepted(self):
        with tailcause.Request("mandant-ü", "agent-東京") as request:
            self.assertEqual(request.tenant, "mandant-ü")

    def test_ids_and_integers_are_range_checked(self):
        for bad in (-1, 1 << 64):
            with self.assertRaises(ValueError):
                tailcause.Request("t", "a", request_id=bad)
            with self.assertRaises(ValueError):
                tailcause.token(1, bad)
        for bad in (True, 1.0, "1"):
            with self.assertRaises(TypeError):
                tailcause.token(bad, 0)
        with self.assertRaises(ValueError):
            tailcause.Request("t", "a").end(1 << 63)
        for bad in (True, 1.0, "1", None):
            with self.assertRaises(TypeError):
                tailcause.Request("t", "a").end(bad)
        for bad in (True, 1.0, None):  # a str is a free-form stage's name
            with self.assertRaises(TypeError):
                tailcause.Stage(1, bad)
        with self.assertRaises(ValueError):
            tailcause.Stage(1, -1)
        with self.assertRaises(TypeError):
            tailcause.Stage("1", tailcause.Stage.TOOL)
        with tailcause.layer(0, (1 << 64) - 1):
            pass
        with self.assertRaises(ValueError):
            with tailcause.layer(-1, 1):
                pass

    def test_trace_ids_follow_w3c(self):
        request = tailcause.Request("t", "a", trace_id="0AF7651916CD43DD8448EB211C80319C")
        self.assertEqual(request.trace_id, "0af7651916cd43dd8448eb211c80319c")
        request.end()
        for bad in ("0af7651916cd43dd8448eb211c80319", "0af7651916cd43dd8448eb211c80319g",
                    "0" * 32, "0af7651916cd43dd-448eb211c80319c"):
            with self.assertRaises(ValueError, msg=bad):
                tailcause.Request("t", "a", trace_id=bad)
        with self.assertRaises(TypeError):
            tailcause.Request("t", "a", trace_id=12345)

    def test_traceparent(self):
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        self.assertTrue(tailcause.valid_traceparent(tp))
        request = tailcause.Request("t", "a", trace_id=tp)
        self.assertEqual(request.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736")
        request.end()
        for bad in (tp.upper().replace("00-", "00-", 1), "01" + tp[2:], "ff" + tp[2:],
                    tp[:3] + "0" * 32 + tp[35:], tp[:36] + "0" * 16 + tp[52:],
                    tp[:35] + "_" + tp[36:], tp[:53] + "0g", tp[:54] + "\n"):
            self.assertFalse(tailcause.valid_traceparent(bad), bad)
            with self.assertRaises(ValueError, msg=bad):
                tailcause.Request("t", "a", trace_id=bad)
        self.assertFalse(tailcause.valid_traceparent(None))
        self.assertFalse(tailcause.valid_traceparent(tp + "-"))

    def test_generation_model(self):
        stage = tailcause.Stage(1, tailcause.Stage.GENERATION, model="gpt-4o", provider="openai")
        self.assertEqual(stage.name, "openai:gpt-4o")
        stage.end()
        self.assertEqual(tailcause.Stage(1, tailcause.Stage.GENERATION, model="m").name, "m")
        with self.assertRaises(ValueError):
            tailcause.Stage(1, tailcause.Stage.RETRIEVAL, model="gpt-4o")
        with self.assertRaises(ValueError):
            tailcause.Stage(1, tailcause.Stage.GENERATION, provider="openai")

    def test_stage_cache_result_and_entropy(self):
        with self.assertRaises(ValueError):
            tailcause.Stage(1, 7)
        with self.assertRaises(ValueError):
            tailcause.Stage(1, "")
        with self.assertRaises(ValueError):
            tailcause.cache_lookup(1, "c", 3)
        with self.assertRaises(ValueError):
            tailcause.cache_lookup(1, "c", "fresh")
        tailcause.cache_lookup(1, "c", "stale", age_ns=5, key_hash=(1 << 64) - 1)
        for bad in (-0.1, float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                tailcause.output_quality(1, bad)
        tailcause.output_quality(1, 1e300)  # clamps to the 64-bit range


class Enabled(unittest.TestCase):
    def test_untraced_probes_read_disabled(self):
        # ctest runs this untraced; test_usdt.sh shows enabled() turning true under bpftrace.
        self.assertFalse(tailcause.enabled())
        for probe in tailcause.PROBES:
            self.assertFalse(tailcause.enabled(probe), probe)
        with self.assertRaises(ValueError):
            tailcause.enabled("tokens")

    def test_each_probe_reads_its_own_semaphore(self):
        # The addresses the library hands out are those of the right symbols (nm), so the
        # Python-side gate of each probe watches that probe's semaphore.
        import read_semaphore
        lib = tailcause.library_path
        symbols = read_semaphore.symbol_values(lib)
        for name, view in tailcause._native.semaphores.items():
            want = read_semaphore.runtime_address(
                os.getpid(), lib, symbols[f"tailcause_{name}_semaphore"])
            self.assertEqual(ctypes.addressof(view), want, name)
        self.assertIsNone(tailcause._native.lib.tailcause_sdk_semaphore(11))


class Objects(unittest.TestCase):
    def test_request_ends_once_and_on_exceptions(self):
        request = tailcause.Request("t", "a", request_id=77)
        self.assertTrue(request.active)
        request.end(3)
        self.assertFalse(request.active)
        request.end(4)  # no second request_end
        with self.assertRaises(KeyError):
            with tailcause.Request("t", "a") as failing:
                raise KeyError("boom")
        self.assertFalse(failing.active)

    def test_stages_name_free_form_stages_other(self):
        with tailcause.Request("t", "a") as request:
            with tailcause.Stage(request, tailcause.Stage.RETRIEVAL) as stage:
                self.assertEqual((stage.kind, stage.name), (2, "retrieval"))
                self.assertEqual(stage.request_id, request.id)
            with tailcause.Stage(request, "rerank") as stage:
                self.assertEqual((stage.kind, stage.name), (tailcause.Stage.OTHER, "rerank"))
            self.assertFalse(stage.active)
            with tailcause.context_scope(request) as rid:
                self.assertEqual(rid, request.id)

    def test_generated_ids(self):
        trace_ids = {tailcause.new_trace_id() for _ in range(2000)}
        self.assertEqual(len(trace_ids), 2000)
        for tid in trace_ids:
            self.assertRegex(tid, r"^[0-9a-f]{32}$")
        request_ids = [tailcause.new_request_id() for _ in range(50000)]
        self.assertEqual(len(set(request_ids)), len(request_ids))
        self.assertNotIn(0, request_ids)
        self.assertTrue(all(0 < rid < (1 << 64) for rid in request_ids))
        self.assertTrue(re.fullmatch(r"0x[0-9a-f]+", hex(tailcause.Request("t", "a").id)))


if __name__ == "__main__":
    unittest.main()
