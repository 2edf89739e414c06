"""A traced h5py program of many kinds of selection, printed as JSON: the results it computed and the records of its
two traces (timings left out). ``python selection_mix.py BASE c|python``: ``python`` runs it as where no C compiler
built ``instrumentation._hotpath`` (the hooks in Python); tests/instrumentation/test_hotpath_records.py compares both.

What the C hook's remembered dataset must survive is here: reads alternating between datasets, a change of extent
between two reads (by the C hook's resize, by the Python hook's, with negative indexes after it), a dataset object
dropped and another made (likely at its address), a dataset resized while no tracer runs, and a second tracer.
"""
import json
import sys

if sys.argv[2] == "python":
    sys.modules["instrumentation._hotpath"] = None  # as where no C compiler built it

import h5py  # noqa: E402
import numpy as np  # noqa: E402

import advisor  # noqa: E402
from h5py._hl.dataset import Dataset  # noqa: E402

base = sys.argv[1]
out = []


def keep(value):
    """A result as JSON can hold it (bytes and records as their repr)."""
    if isinstance(value, str):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind in "biuf":
        return arr.tolist()
    return repr(arr.tolist())


def attempt(fn):
    try:
        out.append(keep(fn()))
    except Exception as exc:  # noqa: BLE001 - what the program sees is part of the comparison
        out.append(type(exc).__name__)


def records(tr) -> dict:
    cols = tr.columns
    folded = {name: getattr(cols, name).tolist() for name in
              ("ds", "write", "rank", "n", "nbytes", "rep", "kind", "ndim", "start", "count", "stride", "block",
               "step", "collective")}
    accesses = []
    for a in tr.accesses:
        config = a.get_config()
        del config["t0"], config["dt"]
        accesses.append(config)
    return {"folded": folded, "accesses": accesses,
            "resizes": [[z.dataset, list(z.shape)] for z in tr.resizes],
            "datasets": sorted([i, d.path, list(d.shape), d.dtype, d.created] for i, d in tr.datasets.items())}


result = {}
with h5py.File(base + ".h5", "w") as f:
    a = f.create_dataset("a", data=np.arange(600.0).reshape(20, 30), chunks=(5, 10), maxshape=(None, 30))
    b = f.create_dataset("b", data=np.arange(100, dtype="i2"))
    g = f.create_dataset("g", data=np.arange(24, dtype="f4").reshape(4, 6), maxshape=(None, 6), chunks=(2, 6))
    comp = f.create_dataset("comp", data=np.array([(i, i * 0.5) for i in range(10)],
                                                  dtype=[("i", "<i4"), ("x", "<f8")]))
    fixed = f.create_dataset("fixed", data=np.array([b"ab", b"cde", b"f"] * 3))
    strs = f.create_dataset("strs", data=["x", "yy", "zzz", "w"], dtype=h5py.string_dtype())
    vl = f.create_dataset("vl", shape=(5,), dtype=h5py.vlen_dtype(np.dtype("i4")))
    for i in range(5):
        vl[i] = np.arange(i + 1, dtype="i4")
    cube = f.create_dataset("cube", data=np.arange(2 * 3 * 4 * 5, dtype="i8").reshape(2, 3, 4, 5))
    with advisor.trace(base + "-1.parquet", overwrite=True) as t1:
        hooks = [type(Dataset.__getitem__).__name__, type(Dataset.__setitem__).__name__]
        for i in range(4):  # alternating datasets, ints and slices, negative and numpy indexes
            for fn in (lambda: a[i], lambda: b[i:i + 5], lambda: a[i, 2:29:3], lambda: b[-1 - i],
                       lambda: a[np.int64(i), np.int32(-2)], lambda: cube[..., i]):
                attempt(fn)
        for fn in (lambda: a[..., 3], lambda: a[2:, ...], lambda: a[()], lambda: a[::-4, 1], lambda: a[-3:, ::7],
                   lambda: a[np.int64(3):np.int32(9):2, -5:], lambda: a[5:5], lambda: a[7:2], lambda: cube[1, ..., 2],
                   lambda: cube[:, 1:, ::2], lambda: cube[-1, -1, -1, -1], lambda: b[::-1], lambda: b[3:90:7],
                   # fancy, boolean, lists, region references, errors
                   lambda: a[[1, 3, 5]], lambda: a[:, [0, 4, 9]], lambda: a[np.arange(20) % 3 == 0, 1:3],
                   lambda: b[b[...] % 7 == 0], lambda: a[[0, 2], [1, 2]], lambda: a[99], lambda: a[0, 0, 0],
                   lambda: a[True], lambda: a[1.5], lambda: a[a.regionref[2:4, 5:9]], lambda: a[h5py.MultiBlockSlice(
                       start=1, count=3, stride=6, block=2), 0:2],
                   # compound, strings, vlen, new_dtype and field views
                   lambda: comp[2:5], lambda: comp["x"], lambda: comp[3, "i"], lambda: comp.fields(["i"])[1:4],
                   lambda: fixed[1:4], lambda: strs[0], lambda: strs.asstr()[1:], lambda: vl[0], lambda: vl[1:3],
                   lambda: a.astype("f4")[0:2, 0], lambda: a.__getitem__((1, 1), new_dtype=np.dtype("f4"))):
            attempt(fn)
        # the remembered dataset's extent changes between reads
        for fn in (lambda: g[1], lambda: g[-1, 1:3], lambda: g.resize(8, axis=0), lambda: g[-1], lambda: g[6, ::2],
                   lambda: g.resize((10, 6)), lambda: g[-1, -2:], lambda: g.resize(size=3, axis=0), lambda: g[-1],
                   lambda: g[..., -1]):
            attempt(fn)
        # dataset objects dropped and others made, likely at the same address
        ids = [a.id, b.id]
        for k in range(6):
            h = h5py.Dataset(ids[k % 2])  # a new object each time (at the last one's address), another dataset
            attempt(lambda: h[k])
            attempt(lambda: h[-1])
            del h
            t = f.create_dataset(f"t{k}", data=np.arange((k + 2) * 3.0).reshape(k + 2, 3))
            attempt(lambda: t[-1])
            attempt(lambda: t[k % 2::2, 1])
            del t
        # writes
        for fn in (lambda: a.__setitem__(0, -1.0), lambda: a.__setitem__((slice(1, 3), slice(2, 9, 3)), 1.0),
                   lambda: b.__setitem__(np.int64(5), 9), lambda: a.__setitem__([2, 5], np.full((2, 30), 7.0)),
                   lambda: a.__setitem__((Ellipsis, 4), 3.0), lambda: comp.__setitem__(0, (7, 7.5)),
                   lambda: vl.__setitem__(2, np.arange(3, dtype="i4")), lambda: strs.__setitem__(1, "v"),
                   lambda: a.__setitem__(99, 1.0), lambda: g.__setitem__(-1, np.ones(6, "f4")),
                   lambda: a.read_direct(np.zeros((2, 3)), np.s_[0:2, 0:3], np.s_[0:2, 0:3]),
                   lambda: a.write_direct(np.ones((2, 3)), np.s_[0:2, 0:3], np.s_[4:6, 3:6]), lambda: a[...]):
            attempt(fn)
        for row in g:  # iteration
            out.append(keep(row))
    g.resize(12, axis=0)  # untraced: the next tracer must see the new extent
    with advisor.trace(base + "-2.parquet", overwrite=True) as t2:
        for fn in (lambda: g[-1], lambda: a[3, -4:], lambda: g[-2:, 1], lambda: b[-3:]):
            attempt(fn)
    result = {"hooks": hooks, "out": out, "failed": [t1.failed_calls, t2.failed_calls],
              "errors": [t1.record_errors, t2.record_errors], "trace1": records(t1.load()),
              "trace2": records(t2.load())}
print(json.dumps(result))
