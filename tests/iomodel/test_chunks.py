"""Chunk walking against what the library really does."""
import h5py
import numpy as np
import pytest

from instrumentation.columns import as_columns
from instrumentation.records import AccessRecord, Selection
from iomodel.chunks import sieve_requests
from iomodel.layout import Layout


def _io() -> np.ndarray:
    with open("/proc/thread-self/io") as fh:
        d = dict(line.split(": ") for line in fh.read().splitlines())
    return np.array([int(d["syscr"]), int(d["rchar"])])


SELECTIONS = {
    "x": [
        ((5, 0), (1, 64), (1, 1)),  # one row: one refill
        ((1000, 0), (512, 64), (1, 1)),  # one 128 KiB run: read directly
        ((3000, 0), (100, 64), (1, 1)),  # one 25 KiB run: one refill
        ((0, 3), (2000, 1), (1, 1)),  # a column: a refill per 256 rows
        ((0, 3), (200, 2), (10, 1)),  # a strided pair of columns
        ((7000, 0), (100, 64), (2, 1)),  # every other row: one lattice level
    ],
    "y": [
        ((2, 10, 5), (2, 30, 45), (1, 1, 1)),  # a box in two planes, rows 512 B apart: a refill per plane
        ((0, 0, 0), (32, 32, 32), (1, 1, 1)),  # 32 planes of 32 rows
        ((0, 0, 0), (4, 128, 128), (1, 1, 1)),  # whole planes: one 256 KiB run
        ((1, 0, 7), (8, 100, 1), (2, 1, 1)),  # a column in every other plane
    ],
}


@pytest.fixture(scope="module")
def contiguous(tmp_path_factory):
    path = tmp_path_factory.mktemp("sieve") / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.zeros((100000, 64), "f4"))
        f.create_dataset("y", data=np.zeros((64, 128, 128), "f4"))
    return path


@pytest.mark.parametrize("name,k", [(n, k) for n, sels in SELECTIONS.items() for k in range(len(sels))])
def test_contiguous_sieve_requests_are_hdf5s_reads(contiguous, name, k):
    start, count, step = SELECTIONS[name][k]
    with h5py.File(contiguous, "r") as f:
        ds = f[name]
        key = tuple(slice(s, s + c * t, t) for s, c, t in zip(start, count, step))
        base = _io()
        base = _io() - base  # what sampling /proc itself reads
        before = _io()
        ds[key]
        got = _io() - before - base
        sel = Selection(start, count, step, (1,) * len(start))
        lay = Layout("hdf5", ds.shape, 4, None)
    nreq, rlen = sieve_requests(as_columns([AccessRecord(0, "read", sel, 0, 0, 0.0, 0.0)]), lay)
    assert (got[0], got[1]) == (nreq[0], nreq[0] * rlen[0])
