"""Shared bits of the realistic-size workloads (benchmarks/workloads/real/, issue 30).

Each is an ordinary program, ``python rNN.py prepare DIR`` (untraced: writes a
1-2 GB input) and ``python rNN.py run DIR`` (the program). The program opens its
data the way its own stack does; the benchmark rewrites the data in a layout
and puts the recipe's opening settings in ``DIR/open.json`` (chunk cache, the
engine, dask chunks, the library the array now lives in), which the helpers
below apply with that stack's own API, as the printed recipe does. The program
prints the seconds its run took after its imports (``RUN_SECONDS=...`` on
stderr): that is the user's run the speed-ups are claimed for.
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager

import numpy as np

SCALE = float(os.environ.get("WORKLOAD_SCALE", "1.0"))


def scaled(n: int, multiple: int = 1) -> int:
    return max(multiple, int(n * SCALE) // multiple * multiple)


def smooth_slab(shape, lo: int, hi: int, seed: int) -> np.ndarray:
    """Rows lo..hi of a smooth separable field of ``shape`` plus a little noise (like simulation output)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((hi - lo,) + tuple(shape[1:]), np.float32)
    for _ in range(3):
        term = np.ones((1,) * len(shape), np.float32)
        for d, n in enumerate(shape):
            k, phase = rng.uniform(0.5, 4.0), rng.uniform(0, 2 * np.pi)
            idx = np.arange(lo, hi) if d == 0 else np.arange(n)
            axis = np.cos(2 * np.pi * k * idx.astype(np.float32) / max(n, 1) + phase).astype(np.float32)
            term = term * axis.reshape((1,) * d + (len(idx),) + (1,) * (len(shape) - d - 1))
        out += term
    noise = np.random.default_rng(seed * 7919 + lo).standard_normal(out.shape, dtype=np.float32)
    out += noise * np.float32(0.01)
    return out * np.float32(10) + np.float32(280)


def smooth_slabs(shape, seed: int, rows: int | None = None):
    """(lo, hi, slab) over the first axis, about 64 MiB each."""
    per_row = int(np.prod(shape[1:])) * 4
    rows = rows or max(1, (64 << 20) // max(per_row, 1))
    for lo in range(0, shape[0], rows):
        hi = min(shape[0], lo + rows)
        yield lo, hi, smooth_slab(shape, lo, hi, seed)


def write_netcdf(path, var, shape, chunks, slabs, zlib=False):
    """A netCDF-4 file written by netCDF4-python (time, lat, lon + coordinates); ``chunks`` None: contiguous."""
    import netCDF4

    dims = ("time", "lat", "lon")[: len(shape)] if len(shape) == 3 else tuple(f"dim_{i}" for i in range(len(shape)))
    with netCDF4.Dataset(path, "w") as nc:
        for d, n in zip(dims, shape):
            nc.createDimension(d, n)
            c = nc.createVariable(d, "f8", (d,))
            c[:] = np.arange(n, dtype="f8")
        kw = dict(contiguous=True) if chunks is None else dict(chunksizes=tuple(chunks), zlib=zlib)
        v = nc.createVariable(var, "f4", dims, **kw)
        for lo, hi, slab in slabs:
            v[lo:hi] = slab


def settings(d) -> dict:
    p = os.path.join(d, "open.json")
    return json.load(open(p)) if os.path.exists(p) else {}


@contextmanager
def open_xarray(path, d):
    """``xr.open_dataset`` as the recipe says: the program's engine (netCDF4-python by default), the chunk cache
    set with that engine's API, dask chunks only when the program used them (``open.json``)."""
    import xarray as xr

    s = settings(d)
    path = s.get("path_netcdf", path)
    engine, cache, chunks = s.get("engine", "netcdf4"), s.get("cache"), s.get("chunks")
    if engine == "netcdf4" and cache:
        import netCDF4

        nc = netCDF4.Dataset(path, "r")
        for v in s.get("cache_variables", list(nc.variables)):
            nc[v].set_var_chunk_cache(size=cache[0], nelems=cache[1], preemption=0.75)
        ds = xr.open_dataset(xr.backends.NetCDF4DataStore(nc), chunks=chunks)
    elif engine == "h5netcdf":
        import hdf5plugin  # noqa: F401 - the recipe's filters

        kw = {} if not cache else {"driver_kwds": {"rdcc_nbytes": cache[0], "rdcc_nslots": cache[1]}}
        ds = xr.open_dataset(path, engine="h5netcdf", chunks=chunks, **kw)
    elif engine == "zarr":
        ds = xr.open_dataset(path, engine="zarr", chunks=chunks)
    else:
        ds = xr.open_dataset(path, engine=engine, chunks=chunks)
    try:
        yield ds
    finally:
        ds.close()


def _opened(path, name, d, library):
    """(h5py File or None, the array) where ``open.json`` says the data now lives (library, path, cache), opened
    with that library's API: h5py with rdcc_nbytes/rdcc_nslots, zarr as it is."""
    s = settings(d)
    library, path, name = s.get("library", library), s.get("path", path), s.get("name", name)
    if library == "hdf5":
        import h5py
        import hdf5plugin  # noqa: F401 - the recipe's filters (blosc, bitshuffle, zstd) are read through it

        cache = s.get("cache")
        kw = {} if not cache else {"rdcc_nbytes": cache[0], "rdcc_nslots": cache[1]}
        f = h5py.File(path, "r", **kw)
        return f, f[name]
    import zarr

    return None, zarr.open_array(path, path=name if name.strip("/") else None, mode="r")


@contextmanager
def open_array(path, name, d, library):
    """The array in the library the data now lives in (``open.json``), closed at the block's end."""
    f, arr = _opened(path, name, d, library)
    try:
        yield arr
    finally:
        if f is not None:
            f.close()


def open_for_process(path, name, d, library):
    """The array as ``open_array`` opens it, held until the process exits: a PyTorch Dataset opens its h5py file in
    each DataLoader worker, at the worker's first sample (an HDF5 file id must not cross a fork)."""
    return _opened(path, name, d, library)[1]


def _time_netcdf4_calls(name: str) -> list:
    """The seconds the program spends in netCDF4-python's Variable indexing of the variable named ``name`` as
    xarray calls it (its ``NetCDF4ArrayWrapper._getitem``: the call ``advisor.verify`` replays for a program read
    through netCDF-C), summed into the list's one item (benchmarks/validation/realsize.py, the recipe against verify
    on the same span). Only that variable's: xarray reads the coordinate variables through the same call when it
    opens the file, and verify replays the advised array alone."""
    from xarray.backends import netCDF4_

    total = [0.0]
    inner = netCDF4_.NetCDF4ArrayWrapper._getitem

    def timed(self, key):
        if self.variable_name.split("/")[-1] != name:
            return inner(self, key)
        t = time.perf_counter()
        try:
            return inner(self, key)
        finally:
            total[0] += time.perf_counter() - t

    netCDF4_.NetCDF4ArrayWrapper._getitem = timed
    return total


def _time_h5py_calls(name: str) -> list:
    """The calls to h5py's ``Dataset.__getitem__`` on datasets named ``name`` (the last part of the path), as
    (start, end) pairs: what the tracer times for an array read through h5py (h5netcdf included), timed here in the
    untraced program (benchmarks/validation/realsize.py, the recipe against verify: a traced program's tracer works
    at its first sight of the dataset, outside the call's span, and the reads after it find what it warmed)."""
    import h5py

    spans: list = []
    inner = h5py.Dataset.__getitem__
    depth = [0]

    def timed(self, args, new_dtype=None):
        if depth[0] or self.name.rsplit("/", 1)[-1] != name:
            return inner(self, args, new_dtype=new_dtype)
        depth[0] += 1
        t = time.perf_counter()
        try:
            return inner(self, args, new_dtype=new_dtype)
        finally:
            spans.append((t, time.perf_counter()))
            depth[0] -= 1

    h5py.Dataset.__getitem__ = timed
    return spans


def _union_seconds(spans: list) -> float:
    """The time inside at least one call (threads' overlapping calls count once, as the trace's time counts them)."""
    total, end = 0.0, float("-inf")
    for b, e in sorted(spans):
        if e > end:
            total += e - max(b, end)
            end = e
    return total


def main(prepare, run) -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("prepare", "run"):
        sys.exit(f"usage: {sys.argv[0]} prepare|run DIR")
    step, directory = sys.argv[1], sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    if step == "prepare":
        prepare(directory)
    else:
        nc_name = os.environ.get("REAL_TIME_NETCDF4_CALLS")
        timed = _time_netcdf4_calls(nc_name) if nc_name else None
        h5_name = os.environ.get("REAL_TIME_H5PY_CALLS")
        spans = _time_h5py_calls(h5_name) if h5_name else None
        t = time.perf_counter()
        run(directory)
        print(f"RUN_SECONDS={time.perf_counter() - t:.6f}", file=sys.stderr)
        if timed is not None:
            print(f"NETCDF4_CALL_SECONDS={timed[0]:.6f}", file=sys.stderr)
        if spans is not None:
            print(f"H5PY_CALL_SECONDS={_union_seconds(spans):.6f}", file=sys.stderr)
