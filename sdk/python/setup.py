# SPDX-License-Identifier: MIT
"""The package's optional C extension, tailcause/_speedups.c, for pip (the rest is in
pyproject.toml). It needs Python's headers (python3-dev) and <tailcause/sdk_lib.h>: the source
tree's sdk/include when built from there, else the installed libtailcause-sdk-dev's. A build that
fails is skipped (optional): the package then calls the library through ctypes."""
from pathlib import Path

from setuptools import Extension, setup

_SOURCE_TREE_HEADERS = Path(__file__).resolve().parent.parent / "include"

setup(ext_modules=[
    Extension("tailcause._speedups", ["tailcause/_speedups.c"], optional=True,
              include_dirs=[str(_SOURCE_TREE_HEADERS)] if _SOURCE_TREE_HEADERS.is_dir() else []),
])
