"""Check the model's request counting against what h5py/zarr really ask the OS for.

Run: python -m benchmarks.validation.iomodel_syscalls [--quick]
For each case a real file is written, then an access pattern is run through
h5py or zarr while /proc/self/io is sampled: ``syscr``/``rchar`` (read calls and
bytes, page-cache hits included) and ``syscw``/``wchar``. The model's
n_cache+n_rdisk, s_cache+s_rdisk, n_wdisk and s_wdisk for the same accesses are
printed next to them. No coefficients are involved: this checks the variables.
Zarr issues extra small reads per chunk file (open/stat are not read calls);
HDF5 reads index (B-tree) nodes once per block (n_rindex).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np

from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.layout import Layout
from iomodel.variables import count_variables


def _io():
    with open("/proc/self/io") as fh:
        d = dict(line.split(": ") for line in fh.read().splitlines())
    return np.array([int(d[k]) for k in ("syscr", "rchar", "syscw", "wchar")])


def _acc(sel, op):
    return AccessRecord(0, op, sel, sel.nelements, sel.nelements * 4, 0.0, 0.0)


def _sel_tuple(sel):
    return tuple(slice(s, s + b) for s, b in zip(sel.start, sel.block))


def _replay(array, accesses) -> None:
    """Each traced access on an h5py Dataset or zarr Array: reads read, writes store an array of ones (a
    scalar would make h5py broadcast it through a one-element memory space: HDF5 then splits the write into
    sieve-buffer pieces that a program writing its own array never sees)."""
    for a in accesses:
        if a.op == "read":
            array[_sel_tuple(a.selection)]
        else:
            array[_sel_tuple(a.selection)] = np.ones(a.selection.shape, np.float32)


def run_hdf5(path, shape, chunks, cache, filters, accesses, fresh):
    import h5py

    kw = {"compression": "gzip"} if filters else {}
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    with h5py.File(path, "w", libver="earliest") as f:
        if fresh:
            f.create_dataset("x", shape=shape, dtype="f4", chunks=chunks, **kw)
        else:
            f.create_dataset("x", data=data, chunks=chunks, **kw)
    with h5py.File(path, "r+", rdcc_nbytes=cache, rdcc_nslots=8191) as f:
        d = f["x"]
        d.id.get_offset  # noqa: B018 - metadata loaded at open
        before = _io()
        _replay(d, accesses)
        f.flush()
        mid = _io()
    return mid - before


def run_zarr(path, shape, chunks, accesses, fresh):
    import zarr

    z = zarr.create_array(path, shape=shape, chunks=chunks, dtype="f4", compressors=None, overwrite=True)
    if not fresh:
        z[...] = np.random.default_rng(0).random(shape, dtype=np.float32)
    z = zarr.open_array(path, mode="r+")
    before = _io()
    _replay(z, accesses)
    return _io() - before


def cases(n):
    rng = np.random.default_rng(1)
    shape = (20000, 64)
    rows = [_acc(Selection.box((int(r), 0), (1, 64)), "read") for r in rng.integers(0, shape[0], n)]
    cols = [_acc(Selection.box((0, int(c)), (shape[0], 1)), "read") for c in rng.integers(0, 64, 4)]
    boxes = [_acc(Selection.box((int(r), 8), (500, 8)), "read") for r in rng.integers(0, shape[0] - 500, n)]
    slabr = [_acc(Selection.box((i, 0), (700, 64)), "read") for i in range(0, shape[0] - 700, 700)]
    slabw = [_acc(Selection.box((i, 0), (700, 64)), "write") for i in range(0, shape[0] - 700, 700)]
    yield "hdf5 rows, chunks 1000x8, 8 MiB cache", "hdf5", shape, (1000, 8), 8 << 20, False, rows, False
    yield "hdf5 rows, chunks 1000x8, no cache", "hdf5", shape, (1000, 8), 0, False, rows, False
    yield "hdf5 boxes, chunks 1000x8, no cache", "hdf5", shape, (1000, 8), 0, False, boxes, False
    yield "hdf5 columns, chunks 20000x8, 64 KiB cache", "hdf5", shape, (20000, 8), 65536, False, cols, False
    yield "hdf5 columns, contiguous", "hdf5", shape, None, 8 << 20, False, cols, False
    yield "hdf5 boxes, contiguous", "hdf5", shape, None, 8 << 20, False, boxes, False
    yield "hdf5 700-row writes, existing, chunks 20000x8, no cache", "hdf5", shape, (20000, 8), 0, False, slabw, False
    yield "hdf5 700-row reads, chunks 20000x8, no cache", "hdf5", shape, (20000, 8), 0, False, slabr, False
    yield "hdf5 700-row writes, existing, contiguous", "hdf5", shape, None, 0, False, slabw, False
    yield "hdf5 rows, gzip chunks 1000x8, no cache", "hdf5", shape, (1000, 8), 0, True, rows, False
    yield "hdf5 700-row writes, existing, chunks 1000x64", "hdf5", shape, (1000, 64), 8 << 20, False, slabw, False
    yield "hdf5 700-row writes, fresh, chunks 1000x64", "hdf5", shape, (1000, 64), 8 << 20, False, slabw, True
    yield "zarr rows, chunks 1000x8", "zarr", shape, (1000, 8), 0, False, rows, False
    yield "zarr 700-row writes, existing, chunks 1000x64", "zarr", shape, (1000, 64), 0, False, slabw, False
    yield "zarr 700-row writes, fresh, chunks 1000x64", "zarr", shape, (1000, 64), 0, False, slabw, True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="iomodel-syscalls-")
    print(f"{'case':48} {'reads real/model':>17} {'rbytes real/model':>22} {'writes real/model':>18} "
          f"{'wbytes real/model':>22}")
    try:
        for name, lib, shape, chunks, cache, filt, acc, fresh in cases(20 if args.quick else 100):
            path = os.path.join(work, "a.h5" if lib == "hdf5" else "a.zarr")
            if lib == "hdf5":
                real = run_hdf5(path, shape, chunks, cache, filt, acc, fresh)
            else:
                real = run_zarr(path, shape, chunks, acc, fresh)
            ds = DatasetRecord(0, lib, "", path, "/x", shape, "float32", chunks=chunks, created=fresh)
            lay = Layout(lib, shape, 4, chunks, rdcc_nbytes=cache, filtered=filt,
                         ratio=0.9 if filt else 1.0)
            v = count_variables(acc, ds, lay, 16 << 30)
            m_r, m_rb = v.n_cache + v.n_rdisk + v.n_rindex, v.s_cache + v.s_rdisk
            print(f"{name:48} {real[0]:8d}/{m_r:<8.0f} {real[1]:11d}/{m_rb:<10.0f} {real[2]:9d}/{v.n_wdisk:<8.0f} "
                  f"{real[3]:11d}/{v.s_wdisk:<10.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
