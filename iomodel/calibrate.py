"""Fit the I/O cost coefficients on this machine (Kang et al., Section IV).

Synthetic microbenchmarks: long 2-D arrays, chunk shapes swept in both
dimensions, read patterns (full scan, columns, random rows, boxes aligned and
unaligned to the chunk columns) and write patterns (a fresh array written
whole, partial-chunk slabs rewritten in a filled one, its pages cached or not), for HDF5 (default, zero
and large chunk cache) and Zarr 3, mostly with a cold page cache. Each run is
measured for real by ``iomodel.replay`` and counted by the model
(``iomodel.variables.count_variables``, same accesses); the coefficients are a
non-negative least-squares fit of time on the counted variables, per library,
with relative weighting so short and long runs count alike.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from . import replay as _replay
from .cases import HDF5_CACHES, Case, features_of, measure, pattern_accesses
from .layout import HDF5_DEFAULT_CACHE


def zarr_concurrency() -> float:
    """How many of one zarr call's chunk reads overlap on the device: zarr's ``async.concurrency`` (10 by
    default). Fitted from a grid of values instead, the quick calibration's 56 zarr runs picked 10 or 3 on
    in-sample error differences of a few percent, and 10 predicted the validation runs better (docs/iomodel.md)."""
    import zarr

    return float(zarr.config.get("async.concurrency"))

ROBUST = True
IRLS_STEPS = 30
IRLS_FLOOR = 0.02
"""Relative errors below this weigh as this much in the robust fit (keeps the reweighting finite)."""

TIME_FLOOR = 1e-3
"""Seconds: relative weights 1/max(t, floor) so sub-millisecond runs (timer noise) do not dominate the fit."""


# ---------------------------------------------------------------------------- grids

@dataclass(frozen=True)
class Cube:
    """A second array of a grid, 3-D and of another size: HDF5 (default chunk cache) and Zarr, cold reads of
    each pattern and partial-chunk slab writes. Device and per-chunk prices fitted on one file size and one
    shape alone did not transfer to others (docs/iomodel-validation.md)."""

    shape: tuple[int, int, int]
    chunks: tuple[tuple[int, int, int], ...]
    box: tuple[int, int, int]
    n: int
    """Lines, slices and boxes read per case."""
    slab_rows: int


@dataclass(frozen=True)
class Grid:
    """A calibration grid: one long 2-D array, chunk shapes, patterns."""

    shape: tuple[int, int]
    chunks: tuple[tuple[int, int], ...]
    n_rows: int
    n_columns: int
    n_boxes: int
    n_slabs: int
    box: tuple[int, int] = (1000, 8)
    slab_rows: int = 1000
    dtype: str = "float32"
    repeat: int = 1
    codec: str = "zstd"
    n_write_rows: int = 400
    """Single rows written per write-rows case: the price of a write call, apart from the bytes it moves."""
    codec_chunks: tuple[tuple[int, int], ...] = ((32768, 8),)
    """Chunk shapes also measured compressed (``codec``, HDF5 default cache): identify s_decode/s_encode."""
    cube: Cube | None = None


QUICK = Grid(shape=(262144, 32), chunks=((4096, 1), (4096, 32), (32768, 8), (262144, 4)),
             n_rows=40, n_columns=3, n_boxes=25, n_slabs=10, repeat=2,
             cube=Cube((64, 256, 256), ((16, 32, 32), (4, 256, 256), (64, 64, 16)), (12, 24, 24), 12, 8))
"""About 2 minutes here; two runs per case, the faster kept (a shared machine only ever adds time)."""
FULL = Grid(shape=(524288, 32),
            chunks=((4096, 1), (4096, 8), (4096, 32), (32768, 1), (32768, 8), (32768, 32), (131072, 8),
                    (131072, 32), (524288, 4)),
            n_rows=100, n_columns=4, n_boxes=50, n_slabs=20, repeat=3,
            cube=Cube((128, 256, 256), ((16, 32, 32), (4, 256, 256), (64, 64, 16), (128, 64, 8)), (12, 24, 24),
                      24, 8))


def calibration_cases(grid: Grid, seed: int = 0) -> list[Case]:
    """Every run of the grid, grouped so each group's array is built once (reads first, writes last)."""
    rng = np.random.default_rng(seed)
    item = np.dtype(grid.dtype).itemsize
    counts = {"columns": grid.n_columns, "rows": grid.n_rows, "box-aligned": grid.n_boxes,
              "box-unaligned": grid.n_boxes, "write-slabs": grid.n_slabs, "write-rows": grid.n_write_rows,
              "write-columns": 1}
    acc = {p: tuple(pattern_accesses(p, grid.shape, itemsize=item, rng=rng, n=counts.get(p, 0), box=grid.box,
                                     slab_rows=grid.slab_rows))
           for p in ("full", "columns", "rows", "box-aligned", "box-unaligned", "write-slabs", "write-rows",
                     "write-full", "write-columns")}
    cube = grid.cube
    cube_acc = {} if cube is None else {
        p: tuple(pattern_accesses(p, cube.shape, itemsize=item, rng=rng, n=cube.n, box=cube.box,
                                  slab_rows=cube.slab_rows))
        for p in ("full", "columns", "rows", "box-unaligned", "write-slabs")}
    cases = []
    for library in ("hdf5", "zarr"):
        # HDF5's contiguous storage too: contiguous reads and writes take no chunk, so chunked runs alone cannot
        # price them (s_wdisk and s_alloc grow together in every chunked write)
        for chunks in grid.chunks + ((None,) if library == "hdf5" else ()):
            caches = [None] if library != "hdf5" else ["default"] if chunks is None else list(HDF5_CACHES)
            base = dict(library=library, shape=grid.shape, dtype=grid.dtype, chunks=chunks)
            # without a chunk cache HDF5 sends one request per run contiguous in chunk and buffer: a whole-array
            # read of narrow chunks is millions of requests (tens of seconds); columns, rows and boxes
            # identify that per-request cost at a fraction of the time
            for cache in caches:
                for p in ("full", "columns", "rows", "box-aligned", "box-unaligned"):
                    if p != "full" or cache != "none":
                        cases.append(Case(pattern=p, accesses=acc[p], cache=cache, **base))
            # a warm page cache identifies the n_cache/s_cache coefficients
            for cache in caches[:2]:
                for p in ("full", "rows") if cache != "none" else ("columns", "rows"):
                    cases.append(Case(pattern=p, accesses=acc[p], cache=cache, warm=True, **base))
            # slabs written over cached pages too: with new pages only (cold, fresh), s_wnew and s_wdisk are one
            for cache in caches[:2]:
                for warm in (False, True):
                    cases.append(Case(pattern="write-slabs", accesses=acc["write-slabs"], cache=cache, warm=warm,
                                      **base))
            for cache in caches[:2]:
                cases.append(Case(pattern="write-full", accesses=acc["write-full"], cache=cache, **base))
            # calls, not bytes: few whole write calls (slabs, full) cannot tell a write call's price from a read's.
            # Only where a row's chunks fit the default chunk cache: else each row reads and writes them whole
            if row_chunk_bytes(grid, chunks) <= HDF5_DEFAULT_CACHE[0] // 2:
                cases.append(Case(pattern="write-rows", accesses=acc["write-rows"], cache=caches[0], warm=True,
                                  **base))
            if library == "hdf5":
                # no chunk cache: one write request per run (what independent MPI-IO writes do too)
                cases.append(Case(pattern="write-columns", accesses=acc["write-columns"], cache="none", **base))
        for chunks in (cube.chunks + ((None,) if library == "hdf5" else ()) if cube else ()):
            for p, accesses in cube_acc.items():
                cases.append(Case(library=library, shape=cube.shape, dtype=grid.dtype, chunks=chunks, pattern=p,
                                  accesses=accesses, cache="default" if library == "hdf5" else None))
        for chunks in grid.codec_chunks:
            base = dict(library=library, shape=grid.shape, dtype=grid.dtype, chunks=chunks, codec=grid.codec,
                        cache="default" if library == "hdf5" else None)
            for p in ("full", "columns", "rows", "write-slabs", "write-full"):
                cases.append(Case(pattern=p, accesses=acc[p], **base))
    return cases


def row_chunk_bytes(grid: Grid, chunks: tuple[int, ...] | None) -> int:
    """Bytes of the chunks one row of ``grid``'s array lies in (contiguous: the row)."""
    item = np.dtype(grid.dtype).itemsize
    if chunks is None:
        return int(np.prod(grid.shape[1:])) * item
    across = np.prod([-(-s // c) for s, c in zip(grid.shape[1:], chunks[1:])])
    return int(across * np.prod(chunks)) * item


def codec_data(shape: Sequence[int], dtype: str) -> np.ndarray:
    """Values a compressor can shrink (random normals on a 1/64 grid, about 2-3x with zstd): random
    floats are incompressible and their decode is a copy, which would not price decoding."""
    rng = np.random.default_rng(0)
    return (np.round(rng.standard_normal(tuple(shape)) * 64) / 64).astype(dtype)


# ---------------------------------------------------------------------------- measure

def measure_cases(cases: Sequence[Case], workdir: str | os.PathLike, *, repeat: int = 1,
                  progress: Callable[[str], None] | None = None,
                  step: Callable[[int, int], None] | None = None) -> list[_replay.ReplayResult]:
    """Measure every case in order, building each group's array once; ``step(done, total)`` after each."""
    out = []
    last_group = None
    data = None
    t0 = time.perf_counter()
    for i, case in enumerate(cases):
        rebuild = case.group != last_group
        last_group = case.group
        if rebuild:
            data = codec_data(case.shape, case.dtype) if case.codec else None
        res = measure(case, Path(workdir) / "array", rebuild=rebuild, data=data, repeat=repeat)
        out.append(res)
        if progress:
            progress(f"[{i + 1:3d}/{len(cases)}] {time.perf_counter() - t0:6.1f}s  {case.label}: "
                     f"{res.total_seconds * 1e3:.1f} ms")
        if step:
            step(i + 1, len(cases))
    return out


# ---------------------------------------------------------------------------- fit

@dataclass(frozen=True)
class LibraryFit:
    """NNLS fit of one library: coefficients per feature and how well they explain the runs."""

    library: str
    coefficients: dict[str, float]
    n_runs: int
    r2: float
    median_rel_error: float
    per_pattern: dict[str, float]  # median |relative error| per pattern
    per_term: dict[str, dict]  # term -> its variables, share of fitted time, median rel. error where dominant
    runs: tuple[tuple[str, float, float], ...] = ()  # (label, measured s, fitted s) per run

    def get_config(self) -> dict:
        return {"library": self.library, "coefficients": self.coefficients, "n_runs": self.n_runs, "r2": self.r2,
                "median_rel_error": self.median_rel_error, "per_pattern": self.per_pattern,
                "per_term": self.per_term, "runs": [list(r) for r in self.runs]}


def fit_library(library: str, rows: Sequence[dict[str, float]], seconds: Sequence[float],
                patterns: Sequence[str], labels: Sequence[str] | None = None, *, robust: bool = ROBUST) -> LibraryFit:
    """Non-negative fit of time on the features, each run weighted by 1/max(t, TIME_FLOOR).

    ``robust``: least absolute relative error (iteratively reweighted NNLS) instead of least squares,
    so that a few runs slowed down by other jobs do not pull every coefficient up."""
    from iomodel.nnls import nnls

    from .cost import PRICED, TERMS
    from .variables import FEATURES

    X = np.array([[r[f] if f in PRICED else 0.0 for f in FEATURES] for r in rows], dtype=float)
    y = np.asarray(seconds, dtype=float)
    w0 = 1.0 / np.maximum(y, TIME_FLOOR)
    used = np.flatnonzero(np.any(X != 0, axis=0))
    coef = np.zeros(len(FEATURES))
    w = w0
    for _ in range(IRLS_STEPS if robust else 1):
        # scale columns to unit norm so NNLS is well conditioned across counts and byte sums
        Xw = X[:, used] * w[:, None]
        norm = np.linalg.norm(Xw, axis=0)
        norm[norm == 0] = 1.0
        sol, _ = nnls(Xw / norm, y * w, maxiter=50 * len(used) + 100)
        coef[:] = 0.0
        coef[used] = sol / norm
        r = np.abs(X @ coef - y) * w0
        w = w0 / np.sqrt(np.maximum(r, IRLS_FLOOR))
    pred = X @ coef
    rel = np.abs(pred - y) / y
    ss_res = float(np.sum((pred - y) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2)) or 1.0
    pats = np.asarray(patterns)
    per_pattern = {p: float(np.median(rel[pats == p])) for p in dict.fromkeys(patterns)}
    fidx = {f: i for i, f in enumerate(FEATURES)}
    term_t = {t: X[:, [fidx[v] for v in vs]] @ coef[[fidx[v] for v in vs]] for t, vs in TERMS.items()}
    total = np.maximum(pred, 1e-30)
    per_term = {}
    for t, tt in term_t.items():
        dominant = tt / total > 0.5
        per_term[t] = {
            "variables": list(TERMS[t]),
            "share": float(tt.sum() / total.sum()),
            "runs_dominant": int(dominant.sum()),
            "median_rel_error_dominant": float(np.median(rel[dominant])) if dominant.any() else float("nan"),
        }
    runs = tuple(zip(labels, y.tolist(), pred.tolist())) if labels is not None else ()
    return LibraryFit(library, {f: float(coef[i]) for i, f in enumerate(FEATURES)}, len(y), 1 - ss_res / ss_tot,
                      float(np.median(rel)), per_pattern, per_term, runs)


def time_band(fit: LibraryFit) -> tuple[float, float]:
    """2.5% and 97.5% quantiles of measured / predicted over the fit's runs: the model's 95% band.

    In-sample, so slightly optimistic; docs/iomodel-validation.md checks it on other cases.
    """
    ratio = np.array([m / p for _, m, p in fit.runs if p > 0])
    if len(ratio) < 10:
        return (1.0, 1.0)
    lo, hi = np.quantile(ratio, [0.025, 0.975])
    return (float(min(lo, 1.0)), float(max(hi, 1.0)))


def format_fit(fit: LibraryFit) -> str:
    """Readable fit report: overall quality, per pattern, per term with its coefficients."""
    from .cost import TERMS

    lines = [f"{fit.library}: {fit.n_runs} runs, R^2 = {fit.r2:.3f}, median |rel. error| = {fit.median_rel_error:.1%}"]
    lines.append("  per pattern: " + ", ".join(f"{p} {e:.0%}" for p, e in fit.per_pattern.items()))
    for t, vs in TERMS.items():
        q = fit.per_term[t]
        coefs = ", ".join(f"{v}={fit.coefficients[v]:.3g}" for v in vs)
        err = q["median_rel_error_dominant"]
        lines.append(f"  {t:9s} share {q['share']:6.1%}  dominant in {q['runs_dominant']:3d} runs"
                     f" (median err {'-' if err != err else f'{err:.0%}'})  {coefs}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- profile

def machine_info() -> dict:
    """What the profile was measured on."""
    import importlib.metadata as md

    info = {"host": platform.node(), "kernel": platform.release(), "python": platform.python_version(),
            "cores": os.cpu_count(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        with open("/proc/cpuinfo") as fh:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
        with open("/proc/meminfo") as fh:
            info["memory_bytes"] = next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemTotal"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for pkg in ("numpy", "h5py", "zarr", "numcodecs", "hdf5plugin", "scipy"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    try:
        import h5py

        versions["hdf5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    info["versions"] = versions
    return info


def page_cache_bytes() -> int:
    """The OS page cache the model may use: MemAvailable."""
    with open("/proc/meminfo") as fh:
        return next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemAvailable"))


@dataclass(frozen=True)
class CalibrationResult:
    profile: object  # iomodel.profile.SystemProfile
    fits: dict[str, LibraryFit]
    cases: list[Case]
    seconds: list[float]


def calibrate(quick: bool = False, *, workdir: str | os.PathLike | None = None, grid: Grid | None = None,
              progress: Callable[[str], None] | None = print,
              step: Callable[[int, int], None] | None = None) -> CalibrationResult:
    """Measure the grid, count the model's variables for the same runs, fit per library. ``step(done, total)``:
    called after each case measured."""
    from .probe import (device_request_bytes, measure_output_spill, measure_page_cache_curve, measure_probe,
                        readahead_bytes)
    from .profile import SystemProfile

    grid = grid or (QUICK if quick else FULL)
    cases = calibration_cases(grid)
    own = workdir is None
    workdir = Path(workdir or f"/tmp/ioadvisor-calibrate-{os.getpid()}")
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        curve = measure_page_cache_curve(workdir)
        readahead, request = readahead_bytes(workdir), device_request_bytes(workdir)
        probe, spill = measure_probe(workdir), measure_output_spill()  # the patterns never spill: measured apart
        if progress:
            progress(f"page-cache curve ({time.perf_counter() - t:.1f}s): "
                     + ", ".join(f"{b >> 10} KiB {b / s / 1e9:.1f} GB/s" for b, s in zip(curve.sizes, curve.seconds)
                                 if b in (4096, 65536, 1 << 20, 16 << 20))
                     + f"; probe: page cache {probe['page_cache_bps'] / 1e9:.2f} GB/s, "
                       f"device {probe['disk_bps'] / 1e9:.2f} GB/s; readahead {readahead >> 10} KiB in requests of "
                       f"{request >> 10} KiB")
        results = measure_cases(cases, workdir, repeat=grid.repeat, progress=progress, step=step)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    seconds = [r.total_seconds for r in results]
    cases = [c.with_stored(r.stored_bytes) for c, r in zip(cases, results)]
    pcache = page_cache_bytes()
    t = time.perf_counter()
    fits = {}
    overlap = zarr_concurrency()
    for lib in ("hdf5", "zarr"):
        idx = [i for i, c in enumerate(cases) if c.library == lib]
        rows = [features_of(cases[i], pcache, curve, overlap, readahead, request) for i in idx]
        fits[lib] = fit_library(lib, rows, [seconds[i] for i in idx], [cases[i].pattern for i in idx],
                                [cases[i].label for i in idx])
        if progress:
            progress(format_fit(fits[lib]))
    if progress:
        progress(f"counted the model's variables and fitted in {time.perf_counter() - t:.1f}s")
    profile = SystemProfile(coefficients={lib: {**f.coefficients, "s_ospill": f.coefficients["s_ospill"] or spill[lib]}
                                          for lib, f in fits.items()},
                            page_cache_bytes=pcache, machine=machine_info(),
                            time_band={lib: time_band(f) for lib, f in fits.items()},
                            page_cache_curve=curve, zarr_overlap=overlap, readahead_bytes=readahead,
                            device_request_bytes=request, probe=probe)
    return CalibrationResult(profile, fits, cases, seconds)


def write_profile(path: str | os.PathLike, result: CalibrationResult, compression: dict | None = None) -> None:
    """The profile file: {"schema": 1, "machine", "io", "compression"?, "calibration": fit quality}."""
    doc = {"schema": 1, "machine": result.profile.machine, "io": result.profile.get_config()}
    if compression is not None:
        doc["compression"] = compression
    doc["calibration"] = {lib: f.get_config() for lib, f in result.fits.items()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


__all__ = ["CalibrationResult", "Cube", "FULL", "Grid", "LibraryFit", "QUICK", "calibrate", "calibration_cases",
           "fit_library", "format_fit", "time_band", "machine_info", "measure_cases", "page_cache_bytes",
           "write_profile", "zarr_concurrency"]
