# SPDX-License-Identifier: MIT
"""Finds and binds libtailcause_sdk.so (the SDK's probes as C functions) with ctypes.

Lookup order: the TAILCAUSE_SDK_LIB environment variable (a path; used alone when set), the
package directory (an installed copy), the source tree's build/sdk/, then the system loader.
A TAILCAUSE_SDK_LIB that cannot be loaded is an ImportError (the user asked for that file); a
library found nowhere makes every probe a no-op, with one RuntimeWarning at import, so an agent
runs unchanged (untraced) on a machine without the SDK.

`probes` calls the library's probe functions: through tailcause._speedups (a C extension built
with the library, _speedups.c) where one for this interpreter is in the package directory or
beside the library, else through ctypes. TAILCAUSE_SDK_PURE_PYTHON=1 forces ctypes.
"""

import ctypes
import ctypes.util
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from pathlib import Path

LIBRARY_NAME = "libtailcause_sdk.so"


def _candidates():
    here = Path(__file__).resolve().parent
    repo_root = here.parent.parent.parent  # sdk/python/tailcause -> the source tree
    return [here / LIBRARY_NAME, repo_root / "build" / "sdk" / LIBRARY_NAME]


def _load():
    explicit = os.environ.get("TAILCAUSE_SDK_LIB")
    if explicit:
        try:
            return ctypes.CDLL(explicit), str(Path(explicit).resolve())
        except OSError as err:
            raise ImportError(f"tailcause: TAILCAUSE_SDK_LIB={explicit!r} cannot be loaded: {err}") from err
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return ctypes.CDLL(str(path)), str(path)
    system = ctypes.util.find_library("tailcause_sdk") or LIBRARY_NAME
    tried.append(f"system loader ({system})")
    try:
        return ctypes.CDLL(system), system
    except OSError:
        warnings.warn(
            "tailcause: libtailcause_sdk.so not found, every probe is a no-op (install "
            "libtailcause-sdk-dev or build the tailcause_sdk target, or set TAILCAUSE_SDK_LIB). "
            "Tried: " + ", ".join(tried), RuntimeWarning, stacklevel=2)
        return _Absent(), None


class _Function:
    """A probe of the absent library: takes any arguments, does nothing."""
    argtypes = None
    restype = None

    def __call__(self, *args):
        return None


class _Absent:
    """Stands in for libtailcause_sdk.so when it is not installed: its semaphores are zeros of
    our own, so no probe ever calls into it, and a direct call does nothing."""

    def __init__(self):
        self._zeros = [ctypes.c_ushort(0) for _ in range(32)]

    def __getattr__(self, name):
        if not name.startswith("tailcause_sdk_"):
            raise AttributeError(name)
        return _Function()

    def tailcause_sdk_enabled_mask(self):
        return 0

    def tailcause_sdk_version(self):
        return b"none"

    def tailcause_sdk_semaphore(self, index):
        return ctypes.addressof(self._zeros[index]) if 0 <= index < len(self._zeros) else None


lib, library_path = _load()

_u64 = ctypes.c_uint64
_i64 = ctypes.c_int64
_str = ctypes.c_char_p

_SIGNATURES = {
    "tailcause_sdk_request_begin": [_u64, _str, _str, _str],
    "tailcause_sdk_request_end": [_u64, _i64],
    "tailcause_sdk_stage_begin": [_u64, _i64, _str],
    "tailcause_sdk_stage_end": [_u64, _i64],
    "tailcause_sdk_context_attach": [_u64],
    "tailcause_sdk_context_detach": [_u64],
    "tailcause_sdk_cache_lookup": [_u64, _str, _i64, _u64, _u64],
    "tailcause_sdk_token": [_u64, _u64],
    "tailcause_sdk_layer_begin": [_u64, _u64],
    "tailcause_sdk_layer_end": [_u64, _u64],
    "tailcause_sdk_output_quality": [_u64, _u64],
}

if library_path is not None:
    for _name, _args in _SIGNATURES.items():
        _fn = getattr(lib, _name)
        _fn.argtypes = _args
        _fn.restype = None

    lib.tailcause_sdk_enabled_mask.argtypes = []
    lib.tailcause_sdk_enabled_mask.restype = ctypes.c_uint32

    lib.tailcause_sdk_version.argtypes = []
    lib.tailcause_sdk_version.restype = ctypes.c_char_p

    lib.tailcause_sdk_semaphore.argtypes = [ctypes.c_uint32]
    lib.tailcause_sdk_semaphore.restype = ctypes.c_void_p

# The library's probes, in the order of enum tailcause_sdk_probe (sdk_lib.h).
PROBES = ("request_begin", "request_end", "stage_begin", "stage_end", "context_attach",
          "context_detach", "cache_lookup", "token", "layer_begin", "layer_end", "output_quality")


def _semaphore(index):
    address = lib.tailcause_sdk_semaphore(index)
    if not address:
        raise ImportError(f"tailcause: {library_path} has no semaphore for probe {index}")
    return ctypes.c_ushort.from_address(address)


# Views of the probes' semaphores in the library: non-zero while a tracer is attached. Reading
# one is an attribute access, so an untraced probe call skips the ctypes call altogether.
semaphores = {name: _semaphore(index) for index, name in enumerate(PROBES)}


def _load_speedups():
    """tailcause._speedups for this interpreter (its ABI tag in the file name), from the package
    directory or the loaded library's; None when there is none or TAILCAUSE_SDK_PURE_PYTHON=1.
    One that cannot be loaded warns and leaves ctypes in use: the agent runs as it would without."""
    if library_path is None or os.environ.get("TAILCAUSE_SDK_PURE_PYTHON") == "1":
        return None
    name = __name__.rpartition(".")[0] + "._speedups"
    folders = [Path(__file__).resolve().parent]
    # Beside the library only when it was found by path: the system loader's bare name
    # (libtailcause_sdk.so.0) says nothing of where it lives, and the working directory is not it.
    if os.path.isabs(library_path):
        folders.append(Path(library_path).resolve().parent)
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / ("_speedups" + suffix)
            if not path.is_file():
                continue
            try:
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except (ImportError, OSError) as err:
                warnings.warn(f"tailcause: {path} cannot be loaded ({err}); probes are called "
                              "through ctypes", RuntimeWarning, stacklevel=2)
                return None
            sys.modules[name] = module
            return module
    return None


def probe_addresses():
    """Each probe's name -> the address of its function in the loaded library."""
    return {p: ctypes.cast(getattr(lib, "tailcause_sdk_" + p), ctypes.c_void_p).value
            for p in PROBES}


class _CtypesProbes:
    """The probes through ctypes, with the names and arguments of _speedups.Probes."""

    def __init__(self):
        for probe in PROBES:
            setattr(self, probe, getattr(lib, "tailcause_sdk_" + probe))


speedups = _load_speedups()
probes = speedups.Probes(probe_addresses()) if speedups is not None else _CtypesProbes()
