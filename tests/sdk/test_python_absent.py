# SPDX-License-Identifier: Apache-2.0
"""The Python SDK on a machine without libtailcause_sdk.so: importing it warns once and every
probe is a no-op, so an agent runs unchanged; its input checks still apply.

Run by ctest (sdk_python); the package is copied outside the source tree so neither the
environment nor build/sdk/ can supply the library."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "sdk" / "python" / "tailcause"
PY_USER = Path(__file__).resolve().parent / "py_user.py"

PROGRAM = """
import tailcause
r = tailcause.Request("t", "a")
try:
    tailcause.Request(7, "a")
except (TypeError, ValueError) as e:
    print("still checked:", type(e).__name__)
print("version", tailcause.version())
"""


class WithoutTheLibrary(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        shutil.copytree(PACKAGE_DIR, Path(self.tmp.name) / "tailcause",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
        self.env = {k: v for k, v in os.environ.items() if k != "TAILCAUSE_SDK_LIB"}
        self.env["PYTHONPATH"] = self.tmp.name
        self.env.pop("PYTHONWARNINGS", None)

    def tearDown(self):
        self.tmp.cleanup()

    def run_python(self, *args):
        return subprocess.run([sys.executable, *args], env=self.env, cwd="/",
                              capture_output=True, text=True, timeout=60)

    def test_every_probe_is_a_no_op_and_the_import_warns_once(self):
        done = self.run_python(str(PY_USER), "--iterations", "3", "--interval-ms", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("library None", done.stdout)
        self.assertIn("iteration 2 enabled=0x0", done.stdout)
        self.assertEqual(done.stderr.count("RuntimeWarning"), 1, done.stderr)
        self.assertIn("libtailcause_sdk.so not found", done.stderr)

    def test_input_is_still_checked(self):
        done = self.run_python("-c", PROGRAM)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("still checked:", done.stdout)
        self.assertIn("version none", done.stdout)
        self.assertEqual(done.stderr.count("RuntimeWarning"), 1, done.stderr)


if __name__ == "__main__":
    unittest.main()
