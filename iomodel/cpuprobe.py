"""Measure a library's per-chunk CPU prices on this machine against a profile's (``fit_to_machine``).

The speed probe (``iomodel.probe``) compares read speeds; what a library spends on each chunk, call and copied
segment moves with the CPU instead, and a profile fitted on another machine keeps its own. The probe here runs a
few warm reads dominated by those prices, for real (``iomodel.replay``: h5py and zarr imported there, not
here), and compares the seconds with what the profile prices the same runs at: the ratio of what the probed
terms took to what they were priced is the factor ``fit_to_machine`` rescales them by. Its reference is the
profile's own model, so no record of the fitting machine is needed (zarr's factor against a profile fitted
here is about 1; HDF5's: CPU_TOLERANCE).

Each library's probe pins the prices its runs spend most in: zarr's per-chunk pipeline (Python, asyncio, codec
pipeline; small chunks read by rows) and HDF5's copy of a hyperslab out of a cached chunk, one segment per row
(narrow columns of a chunk the cache holds). Not HDF5's per-call price (``n_calls``): it is
fitted mostly on device reads, and the model prices warm calls served by the chunk cache at about twice their
time whichever machine fitted it (docs/iomodel.md, "Per-chunk CPU prices"): a probe of it would measure the
model, not the machine.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cost import TERMS
from .profile import SystemProfile


@dataclass(frozen=True)
class CpuProbe:
    """One library's probe: warm runs of ``pattern`` on a float32 array of ``shape``, one per (chunks, count)."""

    shape: tuple[int, int]
    pattern: str
    runs: tuple[tuple[tuple[int, int], int], ...]
    """(chunks, lines read) per run."""
    terms: tuple[str, ...]
    """The prices the runs pin, rescaled by the factor."""
    cache: str | None = None
    """HDF5 chunk cache (``iomodel.cases.HDF5_CACHES`` key)."""
    repeat: int = 3
    """Runs of each, the fastest kept: load on a shared machine only slows a run."""


PROBES = {
    "zarr": CpuProbe((2048, 16), "rows", (((256, 1), 24), ((256, 16), 96)),
                     ("n_calls", "n_chunks", "n_zopen", "n_memcpy")),
    "hdf5": CpuProbe((65536, 16), "columns", (((65536, 4), 160),), ("n_memcpy",), cache="large", repeat=5),
}
"""zarr: 384 chunk reads many to a call and 96 one to a call; hdf5: 160 columns of 65536 one-value segments each
copied out of a 1 MiB chunk held by the cache (10.5 million segments). HDF5's copies vary from run to run more
than zarr's reads: with 40 columns and 3 runs its factor spread x1.5-2.5 over six probes; with 160 and 5 runs,
x1.1-2.3, and under CPU_TOLERANCE in some probes (benchmarks/investigations/cpuprobe_load.py). Both move with
how the process is scheduled (zarr's alone x2.4-3.2, pinned to one CPU x1.1-1.4: docs/iomodel.md)."""
CPU_TOLERANCE = 1.25
"""Factors closer to 1 are left alone. Against a profile fitted on the same machine (`calibrate --quick`) zarr's
factor came out 0.86-1.05 per probe. HDF5's came out 0.49-0.63 against that profile: its fit priced n_memcpy at
twice what the probe's copies take (8.1 ns a segment; they take 4-7), a price the quick grid pins loosely; the
probe's copies are the ones a hyperslab of narrow columns makes (docs/iomodel.md, "Per-chunk CPU prices")."""


def probe_cases(library: str) -> list:
    """The probe's runs for ``library`` (``iomodel.cases.Case``, warm page cache)."""
    from .cases import Case, pattern_accesses

    probe = PROBES[library]
    rng = np.random.default_rng(3)
    return [Case(library=library, shape=probe.shape, dtype="float32", chunks=chunks, pattern=probe.pattern,
                 warm=True, cache=probe.cache, accesses=tuple(pattern_accesses(probe.pattern, probe.shape, rng=rng,
                                                                               n=n)))
            for chunks, n in probe.runs]


def measure_cpu_seconds(directory: str | os.PathLike | None = None, *,
                        repeat: int | None = None) -> dict[str, float]:
    """{library: seconds of its probe's runs, summed}, each run the fastest of ``repeat`` (default: the
    probe's). A library whose runs cannot be made here (no space in the temporary directory, the library
    missing) is left out: its prices stay as profiled."""
    from instrumentation.errors import IoadvisorError

    from .cases import measure

    out = {}
    work = Path(tempfile.mkdtemp(prefix="ioadvisor-cpuprobe-", dir=directory))
    try:
        for lib in PROBES:
            try:
                n = repeat or PROBES[lib].repeat
                out[lib] = float(sum(measure(case, work / f"{lib}{i}", rebuild=True, repeat=n).total_seconds
                                     for i, case in enumerate(probe_cases(lib))))
            except (OSError, ImportError, IoadvisorError):
                continue
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def priced_seconds(profile: SystemProfile, library: str) -> tuple[float, float]:
    """(seconds of the probed terms, seconds of every other term) the profile prices the probe's runs at."""
    from .cases import features_of

    coefs = profile.coefficients.get(library, {})
    probed = PROBES[library].terms
    cpu = other = 0.0
    for case in probe_cases(library):
        feats = features_of(case, profile.page_cache_bytes, profile.page_cache_curve, profile.zarr_overlap,
                            profile.readahead_bytes, profile.device_request_bytes)
        for names in TERMS.values():
            for v in names:
                s = coefs.get(v, 0.0) * feats[v]
                if v in probed:
                    cpu += s
                else:
                    other += s
    return cpu, other


def cpu_factors(profile: SystemProfile, seconds: dict[str, float]) -> dict[str, float]:
    """{library: measured / priced seconds of its probed terms} from this machine's probe ``seconds``
    (what the other terms are priced at taken out first); libraries whose probed terms are priced at nothing
    are left out."""
    out = {}
    for lib, measured in seconds.items():
        cpu, other = priced_seconds(profile, lib)
        if cpu > 0 and measured > other:
            out[lib] = (measured - other) / cpu
    return out


__all__ = ["CPU_TOLERANCE", "PROBES", "CpuProbe", "cpu_factors", "measure_cpu_seconds", "priced_seconds",
           "probe_cases"]
