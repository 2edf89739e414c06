"""r01's recipe against ``verify``, read by read: the 40 point reads of the recommended layout, cold, five ways
(docs/advisor.md, r01's recipe / verify).

- ``verify replay``: ``iomodel.replay.replay`` of the traced reads on the file it builds through netCDF4-python,
  read through netCDF4's ``Variable`` indexing, as ``verify`` does for a program that read through netCDF4
  (``advisor/verify_stack.py``);
- ``h5py replay``: the same on a file h5py builds, read through h5py (what ``verify`` did before);
- ``netCDF4, recipe file``: the same reads through netCDF4's ``Variable`` indexing on the file the recipe wrote;
- ``netCDF-C, verify file`` / ``netCDF-C, recipe file``: the same reads through netCDF-C's ``nc_get_vara`` (the
  libnetcdf netCDF4's wheel ships, by ctypes, on netCDF4's open ids), timed around it: netCDF-C and its libhdf5
  without netCDF4-python's Python per call;
- ``h5py, recipe file``: the same reads through h5py's libhdf5 on the file the printed recipe wrote (netCDF-C),
  timed around ``DatasetID.read``;
- ``netCDF4's libhdf5``: the same reads on that file through the libhdf5 netCDF4's wheel ships (ctypes), timed
  around ``H5Dread``;
- ``traced program``: the unchanged program on that file under ``ioadvisor run``: the trace's seconds of each read
  (what ``benchmarks/validation/realsize.py`` counts as the recipe's I/O); with ``--baseline TREE`` that tree's too.

    python -m benchmarks.investigations.r01_recipe_reads [--rounds 5] [--baseline TREE] [--workdir DIR]

The first run prepares DIR (the 1.5 GB input, its trace, the advice, the recipe's file: a few minutes) and keeps it.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.validation.realsize import REAL, rewrite, run_program
from iomodel.replay import LayoutSpec, evict, replay

HERE = Path(__file__).resolve().parents[2]
W = REAL / "r01_xarray_points_nc.py"


def _env(scale: float) -> dict:
    return {**os.environ, "WORKLOAD_SCALE": str(scale), "PYTHONPATH": str(HERE)}


def setup(wd: Path):
    """(the traced reads of the array, the recipe's layout spec, the recipe's file), prepared once into ``wd``."""
    from advisor.api import advise
    from instrumentation.tracefile import load_trace

    env = _env(1.0)
    data, recipe, trace_path = wd / "data", wd / "recipe", wd / "trace.jsonl"
    if not (recipe / "open.json").exists():
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(W), "prepare", str(data)], env=env, check=True, capture_output=True)
        run_program(W, data, env)  # the first read of a file just written is slower than later cold ones
        run_program(W, data, env, traced=trace_path)
    trace = load_trace(trace_path)
    entry = advise(trace, objective="time").datasets[0]
    ds = next(d for d in trace.datasets.values() if entry.name in (d.key, d.label))
    rec = entry.recommendation
    if not (recipe / "open.json").exists():
        import h5py

        with h5py.File(ds.file, "r") as f:
            arr = f[ds.path][...]
        rewrite(entry, rec, ds, arr, recipe, {}, Path(ds.file))
    events = [a for a in trace.accesses if a.dataset == ds.id and a.op == "read"]
    c = rec.candidate
    spec = LayoutSpec("hdf5", tuple(ds.shape), ds.dtype, tuple(c.chunks),
                      rdcc=(int(c.cache_bytes), 8191, 0.75) if c.cache_bytes else None)
    return events, spec, recipe / "out.nc"


def boxes(events):
    """(start, count) of each traced read: regular boxes."""
    return [(tuple(int(s) for s in a.selection.start), tuple(int(n) for n in np.multiply(a.selection.count,
                                                                                         a.selection.block)))
            for a in events]


def h5py_reads(path: Path, spec, events) -> list[float]:
    import h5py

    evict(path)
    out = []
    kw = {} if spec.rdcc is None else dict(rdcc_nbytes=spec.rdcc[0], rdcc_nslots=spec.rdcc[1])
    with h5py.File(path, "r", **kw) as f:
        d = f[spec_name(f)].id
        for start, count in boxes(events):
            buf = np.empty(count, np.float32)
            mem = h5py.h5s.create_simple(count)
            space = d.get_space()
            space.select_hyperslab(start, count)
            t = time.perf_counter()
            d.read(mem, space, buf)
            out.append(time.perf_counter() - t)
    return out


def spec_name(f) -> str:
    return next(k for k, v in f.items() if getattr(v, "ndim", 0) == 3)


class NetCDF4Hdf5:
    """The libhdf5 bundled with netCDF4's wheel, by ctypes: a plain H5Fopen / H5Dopen2 / H5Dread."""

    def __init__(self):
        import netCDF4

        here = Path(netCDF4.__file__).resolve().parents[1]
        lib = ctypes.CDLL(glob.glob(str(here / "netcdf4.libs" / "libhdf5-*.so*"))[0])
        lib.H5open()
        hid = ctypes.c_int64
        for name, res, args in [("H5Fopen", hid, [ctypes.c_char_p, ctypes.c_uint, hid]),
                                ("H5Dopen2", hid, [hid, ctypes.c_char_p, hid]), ("H5Dget_space", hid, [hid]),
                                ("H5Screate_simple", hid, [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
                                ("H5Pcreate", hid, [hid]),
                                ("H5Sselect_hyperslab", ctypes.c_int, [hid, ctypes.c_int] + [ctypes.c_void_p] * 4),
                                ("H5Dread", ctypes.c_int, [hid] * 5 + [ctypes.c_void_p]),
                                ("H5Pset_chunk_cache", ctypes.c_int, [hid, ctypes.c_size_t, ctypes.c_size_t,
                                                                      ctypes.c_double])] + \
                [(n, ctypes.c_int, [hid]) for n in ("H5Dclose", "H5Fclose", "H5Sclose", "H5Pclose")]:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib, self.float = lib, hid.in_dll(lib, "H5T_NATIVE_FLOAT_g").value
        self.dapl_class = hid.in_dll(lib, "H5P_CLS_DATASET_ACCESS_ID_g").value

    def reads(self, path: Path, spec, events, name: str) -> list[float]:
        lib, u64 = self.lib, ctypes.c_uint64
        evict(path)
        out = []
        fid = lib.H5Fopen(str(path).encode(), 0, 0)
        dapl = lib.H5Pcreate(self.dapl_class)
        if spec.rdcc is not None:
            lib.H5Pset_chunk_cache(dapl, spec.rdcc[1], spec.rdcc[0], spec.rdcc[2])
        d = lib.H5Dopen2(fid, name.encode(), dapl)
        for start, count in boxes(events):
            buf = np.empty(count, np.float32)
            mem = lib.H5Screate_simple(len(count), (u64 * len(count))(*count), None)
            space = lib.H5Dget_space(d)
            lib.H5Sselect_hyperslab(space, 0, (u64 * len(start))(*start), None, (u64 * len(count))(*count), None)
            t = time.perf_counter()
            ok = lib.H5Dread(d, self.float, mem, space, 0, buf.ctypes.data)
            out.append(time.perf_counter() - t)
            lib.H5Sclose(space)
            lib.H5Sclose(mem)
            if ok < 0:
                raise RuntimeError("H5Dread failed")
        lib.H5Dclose(d)
        lib.H5Pclose(dapl)
        lib.H5Fclose(fid)
        return out


def netcdf4_reads(path: Path, spec, events, name: str) -> list[float]:
    from iomodel.replay_netcdf4 import NetCDF4Target

    evict(path)
    target, out = NetCDF4Target(path, spec, name, writable=False), []
    try:
        for start, count in boxes(events):
            t = time.perf_counter()
            target.read("basic", tuple(slice(s, s + n) for s, n in zip(start, count)), None)
            out.append(time.perf_counter() - t)
    finally:
        target.close()
    return out


def netcdf_c_reads(path: Path, spec, events, name: str) -> list[float]:
    import netCDF4

    here = Path(netCDF4.__file__).resolve().parents[1]
    lib = ctypes.CDLL(glob.glob(str(here / "netcdf4.libs" / "libnetcdf-*.so*"))[0])
    size = ctypes.c_size_t
    evict(path)
    out = []
    with netCDF4.Dataset(str(path)) as nc:
        var = nc[name]
        if spec.rdcc is not None:
            var.set_var_chunk_cache(size=spec.rdcc[0], nelems=spec.rdcc[1], preemption=spec.rdcc[2])
        for start, count in boxes(events):
            buf = np.empty(count, np.float32)
            st, ct = (size * len(start))(*start), (size * len(count))(*count)
            t = time.perf_counter()
            rc = lib.nc_get_vara(nc._grpid, var._varid, st, ct, buf.ctypes.data_as(ctypes.c_void_p))
            out.append(time.perf_counter() - t)
            if rc:
                raise RuntimeError(f"nc_get_vara: error {rc}")
    return out


def traced_program(tree: Path, recipe: Path, trace: Path) -> list[float]:
    from instrumentation.tracefile import load_trace

    evict(recipe / "out.nc")
    cmd = [sys.executable, "-c", "import sys; from advisor.entry import main; sys.exit(main(sys.argv[1:]))",
           "run", "--force", "-o", str(trace), "--", sys.executable, str(W), "run", str(recipe)]
    subprocess.run(cmd, cwd=tree, env={**_env(1.0), "PYTHONPATH": str(tree)}, check=True, capture_output=True)
    t = load_trace(trace)
    ids = {i for i, d in t.datasets.items() if d.path.strip("/") == "tas"}
    return [a.duration for a in t.accesses if a.dataset in ids and a.op == "read"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", type=Path, help="another checkout whose `ioadvisor run` is measured too")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/ioadvisor-r01-reads"))
    args = ap.parse_args(argv)
    events, spec, recipe_file = setup(args.workdir)
    import h5py

    with h5py.File(recipe_file, "r") as f:
        name = spec_name(f)
    nc = NetCDF4Hdf5()
    built = args.workdir / "verify"
    nc_spec = replace(spec, stack="netcdf4")
    ways = {"verify replay": lambda: list(replay(events, nc_spec, built, cold=True, rebuild=False).per_access),
            "h5py replay": lambda: list(replay(events, spec, args.workdir / "verify-h5py", cold=True,
                                               rebuild=False).per_access),
            "netCDF4, recipe file": lambda: netcdf4_reads(recipe_file, spec, events, name),
            "netCDF-C, verify file": lambda: netcdf_c_reads(built / "array.h5", spec, events, "data"),
            "netCDF-C, recipe file": lambda: netcdf_c_reads(recipe_file, spec, events, name),
            "h5py, recipe file": lambda: h5py_reads(recipe_file, spec, events),
            "netCDF4's libhdf5": lambda: nc.reads(recipe_file, spec, events, name),
            "traced program": lambda: traced_program(HERE, recipe_file.parent, args.workdir / "t.parquet")}
    if args.baseline:
        ways["baseline traced"] = lambda: traced_program(args.baseline, recipe_file.parent,
                                                         args.workdir / "t.parquet")
    ways["verify replay"]()  # builds its file once
    ways["h5py replay"]()
    got: dict[str, list[float]] = {k: [] for k in ways}
    load0 = os.getloadavg()[0]
    order = list(ways)
    for r in range(args.rounds):
        for k in order[r % len(order):] + order[:r % len(order)]:
            got[k].append(sum(ways[k]()) * 1e3)
    load1 = os.getloadavg()[0]
    print(f"{len(events)} reads of {spec.chunks} chunks, cold, {args.rounds} rounds, load {load0:.1f} -> {load1:.1f}: "
          "ms, median (runs)")
    base = statistics.median(got["verify replay"])
    for k, v in got.items():
        print(f"  {k:22s} {statistics.median(v):7.2f} ({' '.join(f'{x:.1f}' for x in v)})  "
              f"x{statistics.median(v) / base:.2f} of verify's")
    print(json.dumps({k: v for k, v in got.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
