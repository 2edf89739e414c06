"""Capture of real h5py I/O: every way to read or write, the exact selection, and the dataset record."""
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest

import advisor
from instrumentation import hooks_h5py
from instrumentation.records import READ, WRITE, Selection
from instrumentation.selection import fast_hyperslab

A = np.arange(20 * 10, dtype="f8").reshape(20, 10)


@pytest.fixture
def h5(tmp_path):
    f = h5py.File(tmp_path / "a.h5", "w")
    f.create_dataset("x", data=A, chunks=(5, 5), maxshape=(None, 10))
    f.create_dataset("c", data=A)  # contiguous
    yield f
    f.close()


def run(tmp_path, fn):
    with advisor.trace(tmp_path / "t.jsonl") as t:
        out = fn()
    return out, t.load()


def box(start, shape):
    return Selection.box(start, shape)


SELECTIONS = [
    (lambda d: d[3], box((3, 0), (1, 10))),
    (lambda d: d[2:7, 1:3], box((2, 1), (5, 2))),
    (lambda d: d[-3:], box((17, 0), (3, 10))),
    (lambda d: d[1:12:3, ::4], Selection((1, 0), (4, 3), (3, 4), (1, 1))),
    (lambda d: d[..., 4], box((0, 4), (20, 1))),
    (lambda d: d[()], box((0, 0), (20, 10))),
    (lambda d: d[[1, 4, 7], :], Selection((1, 0), (3, 1), (3, 1), (1, 10))),
    (lambda d: d[:, [0, 2, 3]], Selection((0, 0), (1, 3), (1, 1), (20, 1), (None, (0, 2, 3)))),
    (lambda d: d[np.arange(20) % 5 == 0, 2], Selection((0, 2), (4, 1), (5, 1), (1, 1))),
    (lambda d: d[h5py.MultiBlockSlice(start=1, count=3, stride=6, block=2), 0:2],
     Selection((1, 0), (3, 1), (6, 1), (2, 2))),
    (lambda d: d[5:5], Selection((5, 0), (1, 1), (1, 1), (0, 10))),
    (lambda d: d.astype("f4")[0:2, 0:2], box((0, 0), (2, 2))),
    (lambda d: d[np.int64(4), -1], box((4, 9), (1, 1))),
]


@pytest.mark.parametrize("name", ["x", "c"])
@pytest.mark.parametrize("i", range(len(SELECTIONS)))
def test_read_selection_exact_and_result_unchanged(h5, tmp_path, name, i):
    fn, expected = SELECTIONS[i]
    ds = h5[name]
    untraced = fn(ds)
    traced, tr = run(tmp_path, lambda: fn(ds))
    np.testing.assert_array_equal(traced, untraced)
    (acc,) = tr.accesses
    assert acc.op == READ
    assert acc.selection == expected
    assert acc.nelements == np.asarray(untraced).size
    assert acc.nbytes == acc.nelements * 8
    assert acc.duration > 0 and acc.t_start >= 0
    assert tr.datasets[acc.dataset].path == f"/{name}"


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_loop_over_arrays_of_different_ranks_keeps_each_selection(tmp_path, suffix):
    # the queued int/slice reads of one batch are normalized together, array by array
    with h5py.File(tmp_path / "r.h5", "w") as f:
        one, three = f.create_dataset("one", data=np.arange(10.0)), f.create_dataset("three", data=np.zeros((4, 5, 6)))
        sc = f.create_dataset("sc", data=1.0)

        def loop():
            for i in range(4):
                one[i]
                three[i, 1:3, ::2]
                sc[()]
                one[-1 - i:]

        with advisor.trace(tmp_path / f"t{suffix}") as t:
            loop()
        tr = t.load()
    path = {i: d.path for i, d in tr.datasets.items()}
    got = [(path[a.dataset], a.selection) for a in tr.accesses]
    assert got == [x for i in range(4) for x in (
        ("/one", box((i,), (1,))),
        ("/three", Selection((i, 1, 0), (1, 1, 3), (1, 1, 2), (1, 2, 1))),
        ("/sc", Selection((), (), (), ())),
        ("/one", box((9 - i,), (i + 1,))))]


def test_reads_by_ints_and_slices_are_recorded_as_fast_hyperslab_normalizes_them(tmp_path, monkeypatch):
    """The C hook normalizes a known dataset's int/slice/Ellipsis reads itself, at the call: on random indexes
    into arrays of rank 0 to 3, each recorded selection is what selection.fast_hyperslab makes of its index."""
    rng = np.random.default_rng(0)

    def bound(d):
        return None if rng.random() < 0.3 else int(rng.integers(-2 * d, 2 * d))

    def index(shape):
        out = [slice(bound(d), bound(d), [None, 1, 2, 3, 7][rng.integers(5)]) if rng.integers(2)
               else [int, np.int32, np.uint8, np.int64][rng.integers(4)](rng.integers(0, d)) for d in shape]
        if out and rng.random() < 0.2:
            out[int(rng.integers(len(out)))] = Ellipsis
        return tuple(out[:int(rng.integers(len(out) + 1))] if rng.random() < 0.2 else out)

    reads = []
    with h5py.File(tmp_path / "r.h5", "w") as f:
        for j in range(40):
            shape = tuple(int(d) for d in rng.integers(1, 30, rng.integers(0, 4)))
            ds = f.create_dataset(f"d{j}", data=np.zeros(shape, "f4"))
            reads += [(ds, index(shape)) for _ in range(12)]
        in_python = []
        record = hooks_h5py._record
        monkeypatch.setattr(hooks_h5py, "_record", lambda *a: (in_python.append(a[2]), record(*a)))
        with advisor.trace(tmp_path / "r.parquet") as t:
            for ds, args in reads:
                ds[args]
        expected = [fast_hyperslab(args, ds.shape) for ds, args in reads]
    got = [(a.selection.start, a.selection.count, a.selection.stride, a.selection.block, a.nelements)
           for a in t.load().accesses]
    assert len(got) == len(reads) and got == expected
    assert len(in_python) == 40  # each dataset's first read (unknown until then): the other 440 in C


HOOK_PROGRAM = """
import json, sys
if sys.argv[2] == "python":
    sys.modules["instrumentation._hotpath"] = None  # as where no C compiler built it
import h5py, numpy as np
import advisor
from h5py._hl.dataset import Dataset
with h5py.File(sys.argv[1] + ".h5", "w") as f:
    d = f.create_dataset("x", data=np.arange(200.0).reshape(20, 10))
    r = f.create_dataset("r", shape=(1, 4), maxshape=(None, 4), dtype="i4", chunks=(2, 4))
    with advisor.trace(sys.argv[1] + ".parquet", overwrite=True) as t:
        hook = [type(Dataset.__getitem__).__name__, type(Dataset.__setitem__).__name__, type(Dataset.resize).__name__]
        out = [d[3], d[2:7, 1:3], d[-1, ::3], d[np.int64(4)], d[[1, 4]], d.astype("f4")[0:2, 0], d[5:5],
               d.__getitem__((1, 1)), d[(slice(None), 9)], d[..., 1], d[np.int32(2):np.int64(5), ...], d[()]]
        r.resize(3, axis=0)  # r not yet seen: the Python hook
        r[1:3] = 7
        r.resize((5, 4))
        r.resize(size=6, axis=0)
        r.resize(6, axis=0)  # no change
        out.append(r[4:, 1:3])
        d[0] = -1.0
        d[1:3, 2:9:3] = np.ones((2, 3))
        d[np.int64(19), -1] = 5
        d[[2, 5]] = np.full((2, 10), 7.0)
        d.__setitem__((4, slice(0, 2)), [8, 9])
        out.append(d[...])
        for bad in (lambda: d.__getitem__(99), lambda: d.__setitem__(99, 1)):
            try:
                bad()
            except IndexError:
                out.append("IndexError")
tr = t.load()
print(json.dumps({"hook": hook, "out": [np.asarray(o).tolist() if not isinstance(o, str) else o for o in out],
                  "acc": [[a.op, list(a.selection.start), list(a.selection.block), list(a.selection.stride),
                           a.nelements, a.nbytes] for a in tr.accesses], "failed": t.failed_calls,
                  "resized": [[z.dataset, list(z.shape)] for z in tr.resizes]}))
"""


def test_c_and_python_read_write_and_resize_hooks_record_the_same(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(HOOK_PROGRAM)
    got = {}
    for impl in ("c", "python"):
        run_ = subprocess.run([sys.executable, str(prog), str(tmp_path / impl), impl], capture_output=True, text=True,
                              timeout=120)
        assert run_.returncode == 0, run_.stderr
        got[impl] = json.loads(run_.stdout)
    assert got["c"]["hook"] == ["Hook"] * 3 and got["python"]["hook"] == ["function"] * 3
    assert got["c"]["out"] == got["python"]["out"] and got["c"]["out"][-2:] == ["IndexError", "IndexError"]
    assert got["c"]["acc"] == got["python"]["acc"] and len(got["c"]["acc"]) == 20
    assert [a[0] for a in got["c"]["acc"]][12:] == ["write", "read"] + ["write"] * 5 + ["read"]
    assert got["c"]["acc"][9:12] == [  # d[..., 1], d[2:5, ...], d[()]
        ["read", [0, 1], [20, 1], [1, 1], 20, 160], ["read", [2, 0], [3, 10], [1, 1], 30, 240],
        ["read", [0, 0], [20, 10], [1, 1], 200, 1600]]
    assert got["c"]["acc"][15][1:4] == [[1, 2], [2, 1], [1, 3]]  # start, block, stride of d[1:3, 2:9:3]
    assert got["c"]["resized"] == got["python"]["resized"] and [s for _, s in got["c"]["resized"]] == [
        [3, 4], [5, 4], [6, 4]]
    assert got["c"]["failed"] == got["python"]["failed"] == 2


def test_points_mask(h5, tmp_path):
    mask = np.zeros((20, 10), bool)
    mask[3, 4] = mask[0, 9] = mask[19, 0] = True
    out, tr = run(tmp_path, lambda: h5["x"][mask])
    np.testing.assert_array_equal(out, A[mask])
    (acc,) = tr.accesses
    assert acc.selection.kind == "points"
    np.testing.assert_array_equal(acc.selection.points, np.argwhere(mask))
    assert acc.nbytes == 24


def test_region_reference(h5, tmp_path):
    ds = h5["x"]
    ref = ds.regionref[2:4, 5:9]
    out, tr = run(tmp_path, lambda: ds[ref])
    np.testing.assert_array_equal(out, A[2:4, 5:9])
    assert tr.accesses[0].selection == box((2, 5), (2, 4))


def test_writes(h5, tmp_path):
    ds = h5["x"]

    def work():
        ds[1:3, :] = 7
        ds[[0, 5], 2] = [1.0, 2.0]
        ds.write_direct(np.ones((2, 2)), dest_sel=np.s_[10:12, 4:6])

    _, tr = run(tmp_path, work)
    assert [a.op for a in tr.accesses] == [WRITE] * 3
    assert tr.accesses[0].selection == box((1, 0), (2, 10))
    assert tr.accesses[1].selection == Selection((0, 2), (2, 1), (5, 1), (1, 1))
    assert tr.accesses[2].selection == box((10, 4), (2, 2))
    assert ds[10, 4] == 1 and ds[5, 2] == 2


def test_one_record_per_public_call(h5, tmp_path):
    ds = h5["x"]
    dest = np.empty((2, 10))

    def work():
        a = np.asarray(ds)  # __array__ -> read_direct
        ds.read_direct(dest, np.s_[4:6])
        rows = list(h5["c"][0:3])  # a read of 3 rows, then iteration over the numpy result
        it = [r for r in h5["c"]]  # Dataset.__iter__: one read per row
        return a, rows, it

    (a, rows, it), tr = run(tmp_path, work)
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(dest, A[4:6])
    sels = [a.selection for a in tr.accesses]
    assert sels[:3] == [box((0, 0), (20, 10)), box((4, 0), (2, 10)), box((0, 0), (3, 10))]
    assert sels[3:] == [box((r, 0), (1, 10)) for r in range(20)]


def test_fields_bytes_are_those_of_the_fields(tmp_path):
    dt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
    with h5py.File(tmp_path / "f.h5", "w") as f:
        ds = f.create_dataset("r", shape=(8,), dtype=dt)
        _, tr = run(tmp_path, lambda: (ds["b"], ds[2:4, "a"], ds.fields(["a", "c"])[1:2], ds[0:2]))
    assert [a.nbytes for a in tr.accesses] == [8 * 8, 2 * 4, 1 * 7, 2 * 15]
    assert tr.accesses[1].selection == box((2,), (2,))
    assert tr.datasets[0].dtype == dt.str


def test_vlen_strings(tmp_path):
    with h5py.File(tmp_path / "s.h5", "w") as f:
        ds = f.create_dataset("s", data=["ab", "cde", "f"], dtype=h5py.string_dtype())
        out, tr = run(tmp_path, lambda: ds.asstr()[1:3])
    assert list(out) == ["cde", "f"]
    assert tr.accesses[0].selection == box((1,), (2,))


def test_scalar_and_empty(tmp_path):
    with h5py.File(tmp_path / "s.h5", "w") as f:
        sc = f.create_dataset("sc", data=3.5)
        em = f.create_dataset("em", data=h5py.Empty("f4"))
        (v, e), tr = run(tmp_path, lambda: (sc[()], em[()]))
    assert v == 3.5 and isinstance(e, h5py.Empty)
    (acc,) = tr.accesses  # the Empty read moves no data
    assert acc.selection.ndim == 0 and acc.nelements == 1


def test_creation_records(tmp_path):
    import hdf5plugin

    def work():
        with h5py.File(tmp_path / "n.h5", "w", libver="latest") as f:
            f.create_dataset("z", shape=(100, 40), dtype="f4", chunks=(10, 20), maxshape=(None, 40),
                             fillvalue=-1.5, rdcc_nbytes=1 << 20, rdcc_nslots=101, rdcc_w0=0.5,
                             **hdf5plugin.Zstd(clevel=5))
            f.create_dataset("g", data=np.ones((6, 6), "i2"), compression="gzip", compression_opts=6,
                             shuffle=True)
            f["auto"] = np.arange(5)
            f.require_dataset("g", shape=(6, 6), dtype="i2")  # exists: no creation

    _, tr = run(tmp_path, work)
    z, g, auto = tr.datasets.values()
    assert (z.library, z.path, z.shape, z.maxshape, z.chunks, z.dtype) == ("hdf5", "/z", (100, 40), (None, 40),
                                                                            (10, 20), "<f4")
    assert z.created and z.fillvalue == -1.5
    assert z.cache.rdcc_nbytes == 1 << 20 and z.cache.rdcc_nslots == 101 and z.cache.rdcc_w0 == 0.5
    assert [(f.name, f.filter_id) for f in z.filters] == [("zstd", 32015)]
    assert z.filters[0].options["cd_values"] == [5]
    assert z.libver[0] != "earliest"  # 'latest' is reported as the newest format version
    assert z.file == str(tmp_path / "n.h5")
    assert [(f.name, f.filter_id) for f in g.filters] == [("shuffle", 2), ("gzip", 1)]
    assert g.filters[1].options["level"] == 6
    assert auto.path == "/auto" and auto.chunks is None and auto.created
    # data= and f[name] = array write the whole extent
    assert [(a.dataset, a.op, a.selection) for a in tr.accesses] == [
        (g.id, WRITE, box((0, 0), (6, 6))), (auto.id, WRITE, box((0,), (5,)))]
    assert tr.accesses[0].nbytes == 72


def test_sz3_filter_and_chunk_offsets(tmp_path):
    import hdf5plugin

    path = tmp_path / "o.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("q", data=np.random.default_rng(0).random((64, 64)).astype("f4"), chunks=(16, 32),
                         **hdf5plugin.SZ3(absolute=1e-3))
    with h5py.File(path, "r") as f:
        ds = f["q"]
        _, tr = run(tmp_path, lambda: ds[0:16, 0:32])
        expected = np.array([(info.chunk_offset[0] // 16, info.chunk_offset[1] // 32, info.byte_offset, info.size)
                             for info in (ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))])
    (rec,) = tr.datasets.values()
    assert [(f.name, f.filter_id) for f in rec.filters] == [("sz3", 32024)]
    assert not rec.created
    assert rec.chunk_offsets.shape == (8, 4)
    np.testing.assert_array_equal(rec.chunk_offsets[np.lexsort(rec.chunk_offsets[:, :2].T[::-1])],
                                  expected[np.lexsort(expected[:, :2].T[::-1])])


def test_resize_and_shape_follow(h5, tmp_path):
    ds = h5["x"]

    def work():
        ds.resize((30, 10))
        ds[25:30] = 1
        tail = ds[20:]
        ds.resize(22, axis=0)
        ds.resize(size=np.int64(24), axis=0)  # the extent is taken from the call's arguments, as h5py takes it
        ds.resize(np.array([25, 10]))
        return tail

    tail, tr = run(tmp_path, work)
    assert [r.shape for r in tr.resizes] == [(30, 10), (22, 10), (24, 10), (25, 10)] == \
        [(30, 10), (22, 10), (24, 10), ds.shape]
    assert {type(n) for r in tr.resizes for n in r.shape} == {int}
    assert tr.accesses[1].selection == box((20, 0), (10, 10))  # open slice sees the new extent
    assert tail.shape == (10, 10)


def test_two_handles_one_dataset(h5, tmp_path):
    _, tr = run(tmp_path, lambda: (h5["x"][0], h5["x"][1], h5["/x"][2]))
    assert len(tr.datasets) == 1 and len(tr.accesses) == 3


@pytest.mark.parametrize("bad", [
    lambda d: d[100],
    lambda d: d[0:2, 0:2, 0:2],
    lambda d: d[[3, 1]],
    lambda d: d[None],
    lambda d: d["nofield"],
    lambda d: d.__setitem__((slice(0, 2),), np.ones((3, 3))),
    lambda d: d.read_direct(np.empty((2, 2)), np.s_[0:5]),
])
def test_exceptions_unchanged_and_not_recorded(h5, tmp_path, bad):
    ds = h5["x"]
    with pytest.raises(Exception) as plain:
        bad(ds)
    with advisor.trace(tmp_path / "e.jsonl") as t:
        with pytest.raises(Exception) as traced:
            bad(ds)
    assert type(traced.value) is type(plain.value)
    assert str(traced.value) == str(plain.value)
    assert t.failed_calls == 1 and t.record_errors == 0
    assert t.load().accesses == []


def test_null_dataspace_and_unusual_dtypes_record_cleanly(tmp_path):
    def work():
        with h5py.File(tmp_path / "u.h5", "w") as f:
            e = f.create_dataset("e", data=h5py.Empty("f4"))
            ld = f.create_dataset("ld", data=np.ones(3, np.longdouble), fillvalue=np.longdouble(1.5))
            c = f.create_dataset("c", shape=(2,), dtype="c8", fillvalue=1 + 2j)
            return e[()], ld[1], c[0]

    with advisor.trace(tmp_path / "u.jsonl") as t:
        out = work()
    assert t.record_errors == 0
    assert isinstance(out[0], h5py.Empty) and out[1] == 1 and out[2] == 1 + 2j
    e, ld, c = t.load().datasets.values()
    assert e.shape == () and ld.fillvalue == 1.5 and c.fillvalue == 1 + 2j and isinstance(c.fillvalue, complex)
