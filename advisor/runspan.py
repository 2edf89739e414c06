"""The run beyond the trace's window, for the run-level claim (issue 30: claims you can keep).

A Python program started by ``ioadvisor run`` is traced from the tracer's clock origin to its last call. The
run its user times with ``time python prog.py`` also holds what comes before that origin and after the program's
last line: the interpreter's start (and numpy's import, which ioadvisor did before the origin, so the program's
own ``import numpy`` was free in the window) and its exit (module teardown). No layout changes either, so they
belong to both sides of Amdahl's ratio. They are not small: with xarray and netCDF4 imported the exit can take
longer than the I/O of a well-chunked 1.5 GB array, and leaving them out overstates the claimed speed-up
(benchmarks/validation/realsize.py, r01).

The trace cannot time them (the tracer starts after the interpreter and stops before its exit), so they are
measured here: an interpreter of this Python that imports numpy and the program's array stack (the libraries
the trace shows it read through, xarray when the array is xarray's idiom, dask when it read in dask blocks),
its CPU seconds from launch to exit, less the stack's imports after numpy (the trace's window holds those).

The window holds those imports, and a layout in the other library changes them and the exit: a zarr program moved
to HDF5 no longer imports zarr (0.15-0.3 s of CPU here) but imports h5py (about 0.03 s). ``switch_seconds``
measures that difference by the same launches, and the claim for a layout of the other library adds it (benchmarks/validation/regret.py
--real, r03: a zarr program advised HDF5, whose measured run is shorter than the time the claim left unchanged).
"""
from __future__ import annotations

import importlib.util
import os
import re
import resource
import subprocess
import sys
from functools import lru_cache
from typing import Iterable, Sequence

PYTHON = re.compile(r"python[0-9.]*$")

_PROBE = ("import time; import numpy; t1 = time.process_time()\n"
          "{imports}\n"
          "print(time.process_time() - t1)")

REPEAT = 2
"""Launches measured; the fastest is kept (another process's burst only ever adds time)."""


def traced_program(argv: Sequence[str]) -> bool:
    """The trace holds a whole Python program's run: recorded by ``ioadvisor run [...] -- [python] prog.py``
    (its header's ``argv``), not by ``advisor.trace`` inside a program whose other work is unknown."""
    argv = list(argv)
    command = ("ioadvisor", "ioadvisor-python", "__main__.py")  # the Python entry point re-executed for a Python program
    if not argv or os.path.basename(argv[0]) not in command or "run" not in argv[1:3]:
        return False
    if "--" not in argv:
        return False
    cmd = argv[argv.index("--") + 1:]
    return bool(cmd) and (bool(PYTHON.match(os.path.basename(cmd[0]))) or cmd[0].endswith(".py"))


def program_stack(arrays: Iterable[tuple[str, object]]) -> tuple[str, ...]:
    """The Python modules of the array stack the ``(library, idiom)`` arrays were read through (importable ones
    only): h5py, zarr, netCDF4 (HDF5 reached through netCDF4-python's own libhdf5), h5netcdf and xarray (an
    xarray idiom, ``advisor.idiom.Idiom``), dask (read in dask blocks)."""
    out: list[str] = []
    for library, idiom in arrays:
        if library == "zarr":
            out.append("zarr")
        elif idiom is not None and idiom.engine == "netcdf4":
            out.append("netCDF4")
        else:
            out.append("h5py")
            if idiom is not None and idiom.engine == "h5netcdf":
                out.append("h5netcdf")
        if idiom is not None:
            out.append("xarray")
            if idiom.dask:
                out.append("dask.array")
    return tuple(m for m in dict.fromkeys(out) if importlib.util.find_spec(m.split(".")[0]) is not None)


@lru_cache(maxsize=8)
def _launches(modules: tuple[str, ...], python: str = sys.executable) -> tuple[tuple[float, float], ...] | None:
    """(CPU seconds of the whole launch, of the imports of ``modules`` after numpy) for each of REPEAT launches of
    an interpreter that imports numpy and ``modules`` and exits; None when the probe fails."""
    code = _PROBE.format(imports="\n".join(f"import {m}" for m in modules) or "pass")
    out = []
    for _ in range(REPEAT):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120,
                                  env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        except (OSError, subprocess.SubprocessError):
            return None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # the launch's CPU seconds (user + system), not its wall time: the machine's load at advise time is
        # not the run's, and start and exit wait on nothing but the CPU (shared libraries are in memory)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        try:
            imports = float(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None
        if proc.returncode != 0:
            return None
        out.append((cpu, imports))
    return tuple(out)


def start_and_exit_seconds(modules: tuple[str, ...], python: str = sys.executable) -> float | None:
    """Seconds of an interpreter's launch, numpy's import and its exit with ``modules`` imported (the fastest
    of REPEAT launches); None when the probe fails."""
    runs = _launches(tuple(modules), python)
    return None if runs is None else min(max(cpu - imports, 0.0) for cpu, imports in runs)


def launch_seconds(modules: tuple[str, ...], python: str = sys.executable) -> float | None:
    """CPU seconds of a whole launch that imports numpy and ``modules`` and exits (the fastest of REPEAT)."""
    runs = _launches(tuple(modules), python)
    return None if runs is None else min(cpu for cpu, _ in runs)


def switch_seconds(current: Sequence[str], other: Sequence[str]) -> float | None:
    """Seconds a run gains (negative) or loses when its program uses the ``other`` stack instead of ``current``
    (``program_stack``'s): the difference of the two stacks' whole launches, their imports and their exits
    (zarr's exit, with its threads, is dearer than h5py's), measured alike; None when a probe fails."""
    a, b = launch_seconds(tuple(other)), launch_seconds(tuple(current))
    return None if a is None or b is None else a - b


def describe_switch(library: str, seconds: float, current: Sequence[str], other: Sequence[str]) -> str:
    """The advice's note on the imports a move to ``library`` changes."""
    return (f"the run's claim for a {library} layout counts the program's imports and exit with {', '.join(other)} "
            f"instead of {', '.join(current)}: {seconds:+.2g} s, measured here by launching this Python")


def describe(seconds: float, modules: Sequence[str]) -> str:
    """The advice's note on the time added to the run."""
    stack = ", ".join(("numpy",) + tuple(modules))
    return (f"the run's claim adds {seconds:.2g} s outside the trace's window: the interpreter's start and exit "
            f"with {stack} imported (numpy's import included: ioadvisor imported it before its clock started), "
            "measured here by launching this Python; no layout changes it")


__all__ = ["describe", "describe_switch", "launch_seconds", "program_stack", "start_and_exit_seconds", "switch_seconds",
           "traced_program"]
