"""The versions a trace's header names: Python and the array libraries, imported or installed."""
from __future__ import annotations

import functools
import os
import platform
import sys


@functools.lru_cache(maxsize=None)
def _dist_info_versions() -> dict[str, str]:
    """Name -> version of the distributions installed as ``NAME-VERSION.dist-info`` directories on sys.path
    (the first one found, as importlib.metadata finds them): a directory listing per entry, about 1 ms, where
    importlib.metadata costs about 20 ms to import and 3 ms a package (a run's fixed cost:
    benchmarks/tracing_overhead.py)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for dist in names:
            if dist.endswith(".dist-info"):
                name, _, version = dist[: -len(".dist-info")].partition("-")
                found.setdefault(name.lower().replace("-", "_").replace(".", "_"), version)
    return found


@functools.lru_cache(maxsize=None)
def _installed_version(name: str) -> str | None:
    """A package's installed version, looked up once per process (forked children inherit it)."""
    found = _dist_info_versions().get(name.lower().replace("-", "_"))
    if found:
        return found
    try:  # installed otherwise (an egg, a zip): the slower, general way
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def versions(installed: bool = True) -> dict:
    """Versions of Python and the array libraries: those imported, and (``installed``) those installed but not
    imported yet. A followed process's part looks up none (about 15-30 ms of its start-up, per child process:
    benchmarks/tracing_overhead.py); the run's trace has them."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "h5py", "zarr", "numcodecs", "hdf5plugin"):
        mod = sys.modules.get(name)
        if mod is None:
            if not installed:
                continue
            found = _installed_version(name)
            if found is not None:
                out[name] = found
        else:
            out[name] = getattr(mod, "__version__", "")
    h5 = sys.modules.get("h5py")
    if h5 is not None:
        out["hdf5"] = h5.version.hdf5_version
    return out


__all__ = ["versions"]
