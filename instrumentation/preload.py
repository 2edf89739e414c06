"""Where the libhdf5 interposer is and how a process is started with it (``LD_PRELOAD``).

Apart from instrumentation/interpose.py (which reads the interposer's records, with numpy) so that a launcher
that only starts a program with the interposer (``ioadvisor run``, instrumentation/launch.py) imports neither
numpy nor the readers (benchmarks/tracing_overhead.py, fixed cost)."""
from __future__ import annotations

import importlib.machinery
import os

from . import settings

LOG_DIR_VAR = settings.H5_DIR
"""Environment variable naming the directory a preloaded interposer writes into."""
LIB_NAME = "_h5interpose"
CAPTURE_LEVEL = "libhdf5 calls (H5Dread/H5Dwrite, LD_PRELOAD interposer)"
"""``TraceHeader.capture`` entry when the interposer records."""


def library() -> Path | None:
    """The interposer built for this Python (next to this module), or None when it was not built."""
    from pathlib import Path

    path = library_file()
    return None if path is None else Path(path)


def library_file() -> str | None:
    """``library()`` as a string, found with ``os`` alone: a native run's launcher starts its program before
    pathlib's import (instrumentation/nativestart.py)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, f"{LIB_NAME}{suffix}")
        if os.path.exists(path):
            return path
    return None


def child_environment(log_dir: str, environ=None) -> dict[str, str]:
    """The variables that make a process started with this environment record into ``log_dir``."""
    environ = os.environ if environ is None else environ
    lib = str(library_file())
    preload = [p for p in environ.get("LD_PRELOAD", "").replace(":", " ").split() if p and p != lib]
    return {"LD_PRELOAD": " ".join([lib, *preload]), LOG_DIR_VAR: log_dir}


def preloaded(environ=None) -> bool:
    """Was this process started with the interposer in LD_PRELOAD?"""
    environ = os.environ if environ is None else environ
    return str(library_file()) in environ.get("LD_PRELOAD", "").replace(":", " ").split()
