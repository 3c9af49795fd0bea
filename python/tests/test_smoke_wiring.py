"""The build's wiring, without the package: the library tests/python.sh
names (JOBBOARD_LIBRARY, else the loader's libjobboard.so.0) loads, in a
sanitizer build too, and is the version the dist-info says; libjbsync.so.0
loads on it when built with Redis; the taskflow entry point is declared."""

import ctypes
import importlib.metadata
import os

import pytest


def _load():
    path = os.environ.get("JOBBOARD_LIBRARY", "libjobboard.so.0")
    return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def _version():
    try:
        return importlib.metadata.version("jobboard")
    except importlib.metadata.PackageNotFoundError:
        return None


def test_library_version_matches_dist_info():
    lib = _load()
    lib.jb_version.restype = ctypes.c_char_p
    lib.jb_version.argtypes = [ctypes.POINTER(ctypes.c_int)] * 3
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    text = lib.jb_version(ctypes.byref(major), ctypes.byref(minor),
                          ctypes.byref(patch)).decode()
    assert text == "%d.%d.%d" % (major.value, minor.value, patch.value)
    if _version() is not None:
        assert text == _version()


def test_sync_library_loads():
    path = os.environ.get("JOBBOARD_SYNC_LIBRARY")
    if not path:
        pytest.skip("not built with Redis (no JOBBOARD_SYNC_LIBRARY)")
    _load()
    ctypes.CDLL(path)


def test_taskflow_entry_point():
    if _version() is None:
        pytest.skip("no jobboard dist-info on sys.path")
    eps = importlib.metadata.distribution("jobboard").entry_points
    found = [(e.group, e.name, e.value) for e in eps]
    assert ("taskflow.jobboards", "jobboard",
            "jobboard.taskflow_backend:JobboardJobBoard") in found
