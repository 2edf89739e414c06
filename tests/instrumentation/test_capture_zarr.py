"""Capture of real zarr 3 I/O (zarr_format 3 and 2): every indexing API, exact selections, array records."""
import numpy as np
import pytest
import zarr

import advisor
from instrumentation.records import READ, WRITE, Selection

A = np.arange(20 * 10, dtype="f4").reshape(20, 10)


def box(start, shape):
    return Selection.box(start, shape)


@pytest.fixture(params=[3, 2], ids=["v3", "v2"])
def arr(request, tmp_path):
    z = zarr.create_array(store=str(tmp_path / "a.zarr"), shape=A.shape, chunks=(5, 5), dtype="f4",
                          zarr_format=request.param)
    z[:] = A
    return z


def run(tmp_path, fn):
    with advisor.trace(tmp_path / "t.jsonl") as t:
        out = fn()
    return out, t.load()


MASK = np.zeros((20, 10), bool)
MASK[3, 4] = MASK[0, 9] = MASK[19, 0] = True

SELECTIONS = [
    (lambda z: z[3], box((3, 0), (1, 10))),
    (lambda z: z[2:7, 1:3], box((2, 1), (5, 2))),
    (lambda z: z[-3:, -1], box((17, 9), (3, 1))),
    (lambda z: z[1:12:3, ::4], Selection((1, 0), (4, 3), (3, 4), (1, 1))),
    (lambda z: z[..., 4], box((0, 4), (20, 1))),
    (lambda z: z[5:5], box((5, 0), (0, 10))),
    (lambda z: z.get_basic_selection((slice(0, 4), 2)), box((0, 2), (4, 1))),
    (lambda z: z.oindex[[1, 4, 7], 2:8:2], Selection((1, 2), (3, 3), (3, 2), (1, 1))),
    (lambda z: z.oindex[[9, 0, 3], :], Selection((0, 0), (3, 1), (1, 1), (1, 10), ((0, 3, 9), None))),
    (lambda z: z.get_orthogonal_selection((np.arange(20) % 5 == 0, [0, 1])), Selection((0, 0), (4, 1), (5, 1), (1, 2))),
    (lambda z: z.blocks[1, 0], box((5, 0), (5, 5))),
    (lambda z: z.get_block_selection((slice(2, 4), 1)), box((10, 5), (10, 5))),
]


@pytest.mark.parametrize("i", range(len(SELECTIONS)))
def test_read_selection_exact_and_result_unchanged(arr, tmp_path, i):
    fn, expected = SELECTIONS[i]
    untraced = fn(arr)
    traced, tr = run(tmp_path, lambda: fn(arr))
    np.testing.assert_array_equal(traced, untraced)
    (acc,) = tr.accesses
    assert acc.op == READ
    assert acc.selection == expected
    assert acc.nelements == np.asarray(untraced).size
    assert acc.nbytes == 4 * acc.nelements
    assert acc.duration > 0


@pytest.mark.parametrize("how", ["vindex", "coordinate", "mask", "vmask"])
def test_points_in_callers_order(arr, tmp_path, how):
    rows, cols = [19, 0, 3], [0, 9, 4]
    fn = {
        "vindex": lambda: arr.vindex[rows, cols],
        "coordinate": lambda: arr.get_coordinate_selection((rows, cols)),
        "mask": lambda: arr.get_mask_selection(MASK),
        "vmask": lambda: arr.vindex[MASK],
    }[how]
    out, tr = run(tmp_path, fn)
    (acc,) = tr.accesses
    assert acc.selection.kind == "points"
    expected = np.argwhere(MASK) if "mask" in how else np.array([rows, cols]).T
    np.testing.assert_array_equal(acc.selection.points, expected)
    np.testing.assert_array_equal(out, A[tuple(expected.T)])


def test_writes_all_apis(arr, tmp_path):
    def work():
        arr[1:3] = 7
        arr.oindex[[0, 5], 2] = [1.0, 2.0]
        arr.vindex[[4, 6], [1, 8]] = [3.0, 4.0]
        arr.set_block_selection((3, 1), np.zeros((5, 5)))
        arr.set_mask_selection(MASK, -1)

    _, tr = run(tmp_path, work)
    assert [a.op for a in tr.accesses] == [WRITE] * 5
    assert tr.accesses[0].selection == box((1, 0), (2, 10))
    assert tr.accesses[1].selection == Selection((0, 2), (2, 1), (5, 1), (1, 1))
    np.testing.assert_array_equal(tr.accesses[2].selection.points, [[4, 1], [6, 8]])
    assert tr.accesses[3].selection == box((15, 5), (5, 5))
    assert tr.accesses[4].nelements == 3
    assert arr[5, 2] == 2 and arr[6, 8] == 4 and arr[0, 9] == -1


def test_array_records_v3_sharded(tmp_path):
    def work():
        z = zarr.create_array(store=str(tmp_path / "s.zarr"), name="grp/arr", shape=(40, 30), chunks=(5, 10),
                              shards=(20, 30), dtype="f8", fill_value=-2.0,
                              compressors=zarr.codecs.ZstdCodec(level=4))
        z[0:5, 0:10] = 1.0
        return z

    _, tr = run(tmp_path, work)
    (rec,) = tr.datasets.values()
    assert (rec.library, rec.zarr_format, rec.created) == ("zarr", 3, True)
    assert rec.file == str(tmp_path / "s.zarr") and rec.path == "grp/arr"
    assert (rec.shape, rec.chunks, rec.shards, rec.maxshape) == ((40, 30), (5, 10), (20, 30), (None, None))
    assert rec.dtype == "<f8" and rec.fillvalue == -2.0
    assert [f.name for f in rec.filters] == ["bytes", "zstd"]
    assert rec.filters[1].options["level"] == 4
    assert tr.accesses[0].selection == box((0, 0), (5, 10))


@pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3 specification")
def test_array_records_v2_and_serializer(tmp_path):
    from numcodecs import Blosc
    from zarr.codecs.numcodecs import ZFPY

    def work():
        zarr.create_array(store=str(tmp_path / "v2.zarr"), shape=(8,), chunks=(4,), dtype="i2", zarr_format=2,
                          compressors=Blosc(cname="lz4", clevel=3))
        zarr.create_array(store={}, shape=(16, 16), chunks=(8, 8), dtype="f4",
                          serializer=ZFPY(mode=4, tolerance=1e-3), compressors=None)

    _, tr = run(tmp_path, work)
    v2, zfp = tr.datasets.values()
    assert v2.zarr_format == 2 and [f.name for f in v2.filters] == ["blosc"]
    assert v2.filters[0].options["cname"] == "lz4"
    assert zfp.file.startswith("memory://") and [f.name for f in zfp.filters] == ["zfp"]
    assert zfp.filters[0].options["tolerance"] == 1e-3


def test_resize_append(arr, tmp_path):
    def work():
        arr.append(np.ones((5, 10), "f4"))
        arr.resize((30, 10))
        return arr[20:]

    tail, tr = run(tmp_path, work)
    assert [r.shape for r in tr.resizes] == [(25, 10), (30, 10)]
    assert tr.accesses[0].op == WRITE and tr.accesses[0].selection == box((20, 0), (5, 10))
    assert tr.accesses[1].selection == box((20, 0), (10, 10))
    assert tail.shape == (10, 10)
    assert tr.datasets[0].shape == (20, 10)  # first seen before the append


def test_structured_bytes(tmp_path):
    dt = np.dtype([("a", "<i4"), ("b", "<f8")])
    z = zarr.create_array(store={}, shape=(6,), chunks=(3,), dtype=dt, zarr_format=2)
    _, tr = run(tmp_path, lambda: z[0:2])
    assert tr.accesses[0].nbytes == 2 * 12 and tr.datasets[0].dtype == "|V12"


def test_async_api(tmp_path):
    import asyncio

    async def work():
        z = await zarr.api.asynchronous.create_array(store={}, shape=(10,), chunks=(5,), dtype="i4")
        await z.setitem(slice(0, 10), np.arange(10))
        return await z.getitem(slice(2, 4))

    out, tr = run(tmp_path, lambda: asyncio.run(work()))
    np.testing.assert_array_equal(out, [2, 3])
    assert [(a.op, a.selection) for a in tr.accesses] == [(WRITE, box((0,), (10,))), (READ, box((2,), (2,)))]


@pytest.mark.parametrize("bad", [
    lambda z: z[100],
    lambda z: z[0:2, 0:2, 0:2],
    lambda z: z[::-1],
    lambda z: z.vindex[[1, 2], [1, 2, 3]],
    lambda z: z.__setitem__(slice(0, 2), "abc"),
    lambda z: z.get_basic_selection(slice(0, 2), fields="b"),
])
def test_exceptions_unchanged(arr, tmp_path, bad):
    with pytest.raises(Exception) as plain:
        bad(arr)
    with advisor.trace(tmp_path / "e.jsonl") as t:
        with pytest.raises(Exception) as traced:
            bad(arr)
    assert type(traced.value) is type(plain.value)
    assert str(traced.value) == str(plain.value)
    assert t.record_errors == 0
    assert t.load().accesses == []


ASYNC_SELECTIONS = [  # the async API passes the indexer to _get_selection by keyword
    ("get_orthogonal_selection", ([1, 4, 9], slice(2, 5)),
     Selection((1, 2), (3, 1), (1, 1), (1, 3), ((1, 4, 9), None))),
    ("get_mask_selection", MASK, Selection((0, 0), (1, 1), (1, 1), (1, 1),
                                           points=np.array([[0, 9], [3, 4], [19, 0]]))),
    ("get_coordinate_selection", ([7, 2], [3, 8]), Selection((0, 0), (1, 1), (1, 1), (1, 1),
                                                             points=np.array([[7, 3], [2, 8]]))),
]


@pytest.mark.parametrize("method, selection, expected", ASYNC_SELECTIONS, ids=[s[0] for s in ASYNC_SELECTIONS])
def test_async_array_selections_recorded(arr, tmp_path, method, selection, expected):
    import asyncio

    async def read():
        a = await zarr.api.asynchronous.open_array(store=arr.store_path.store, path=arr.store_path.path)
        return await getattr(a, method)(selection)

    untraced = asyncio.run(read())
    traced, tr = run(tmp_path, lambda: asyncio.run(read()))
    np.testing.assert_array_equal(traced, untraced)
    (acc,) = tr.accesses
    assert acc.op == READ and acc.nelements == np.asarray(untraced).size
    assert acc.selection.kind == expected.kind
    if expected.points is not None:
        np.testing.assert_array_equal(acc.selection.points, expected.points)
    else:
        assert acc.selection == expected


@pytest.mark.parametrize("name", ["t.jsonl", "t.parquet"])
def test_complex_fill_value_round_trips(tmp_path, name):
    """A complex fill value is written as [re, im] (JSON has no complex) and read back as a complex,
    in the trace and in the advice made from it."""
    def work():
        z = zarr.create_array(store=str(tmp_path / "c.zarr"), shape=(40, 30), chunks=(10, 10), dtype="c16",
                              fill_value=1 + 2j)
        z[:] = np.arange(40 * 30).reshape(40, 30) * (1 - 1j)
        return z[:10]

    with advisor.trace(tmp_path / name) as t:
        work()
    tr = t.load()
    (rec,) = tr.datasets.values()
    assert isinstance(rec.fillvalue, complex) and rec.fillvalue == 1 + 2j
    if name.endswith(".jsonl"):
        assert '"fillvalue":[1.0,2.0]' in (tmp_path / name).read_text()
    assert advisor.advise(tr).dataset().dtype == "<c16"
