import numpy as np
import pytest

from instrumentation.patterns import CLASSES, EMPTY, classify, classify_accesses, summarize
from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, ResizeRecord, Selection, TraceHeader
from instrumentation.tracefile import TraceWriter, load_trace

SHAPE = (200_000, 32)


def acc(sel, op=READ, rank=0, ds=0, dt=1e-4):
    n = sel.nelements
    return AccessRecord(ds, op, sel, n, 4 * n, 0.0, dt, rank)


def points(coords):
    a = np.asarray(coords, dtype=np.int64)
    z = (0,) * a.shape[1]
    return Selection(z, z, (1,) * a.shape[1], z, points=a)


CASES = {
    "full": [Selection.box((0, 0), SHAPE)],
    "rows": [Selection.box((1000, 0), (1000, 32)), Selection.box((7, 0), (1, 32)),
             # an index list that happens to be consecutive is a dense row block
             Selection((1, 0), (3, 1), (1, 1), (1, 32), indices=((1, 2, 3), None)),
             # h5py merges [10:20] given as a regular hyperslab with count > 1, stride == block
             Selection((10, 0), (5, 1), (2, 1), (2, 32))],
    "columns": [Selection.box((0, 3), (200_000, 1)), Selection.box((0, 0), (200_000, 8))],
    "boxes": [Selection.box((1000, 8), (1000, 8)), Selection.box((0, 0), (10, 31))],
    "strided": [Selection((0, 0), (20_000, 1), (10, 1), (1, 32)),
                Selection((0, 0), (100, 4), (2000, 8), (1000, 2)),
                Selection((1, 0), (3, 1), (1, 1), (1, 32), indices=((1, 5, 9), None))],
    "points": [points([[1, 2], [5, 7], [9, 9]]), Selection.box((5, 5), (1, 1))],
}


@pytest.mark.parametrize("expected", list(CASES))
def test_each_selection_kind_gets_its_class(expected):
    codes = classify_accesses([acc(s) for s in CASES[expected]], SHAPE)
    assert [CLASSES[c] for c in codes] == [expected] * len(CASES[expected])


def test_empty_selection_is_not_classified():
    assert classify_accesses([acc(Selection.box((0, 0), (0, 32)))], SHAPE).tolist() == [EMPTY]
    assert classify([acc(Selection.box((0, 0), (0, 32)))], SHAPE).kind == "none"


def test_one_dimensional_and_three_dimensional_arrays():
    one = classify_accesses([acc(Selection.box((0,), (100,))), acc(Selection.box((5,), (10,))),
                             acc(Selection((0,), (10,), (3,), (1,)))], (100,))
    assert [CLASSES[c] for c in one] == ["full", "rows", "strided"]
    cube = (50, 40, 30)
    three = classify_accesses([acc(Selection.box((3, 0, 0), (1, 40, 30))),  # a time slice
                               acc(Selection.box((0, 5, 7), (50, 1, 1))),  # a time series at a point
                               acc(Selection.box((3, 5, 7), (2, 10, 10)))], cube)
    assert [CLASSES[c] for c in three] == ["rows", "columns", "boxes"]


def test_dominant_class_needs_both_count_and_bytes():
    rows = [acc(Selection.box((1000 * i, 0), (1000, 32))) for i in range(95)]
    cols = [acc(Selection.box((0, i), (200_000, 1))) for i in range(5)]
    assert classify(rows, SHAPE).kind == "rows"
    # 95% of accesses are row blocks, but the 5 column reads move 25% of the bytes
    mixed = classify(rows + cols, SHAPE)
    assert mixed.kind == "mixed"
    assert [(c.name, c.n) for c in mixed.classes] == [("rows", 95), ("columns", 5)]
    assert mixed.describe().startswith("mixed: rows 95% (1000x32), columns 5% (200000x1)")


def test_typical_shape_is_the_median_of_the_dominant_class():
    sizes = [10, 500, 1000, 1000, 4000]
    pat = classify([acc(Selection.box((0, 8), (n, 8))) for n in sizes], SHAPE)
    assert pat.kind == "boxes"
    assert pat.typical_shape == (1000, 8)
    strided = classify([acc(Selection((0, 0), (100, 1), (10, 1), (2, 32)))], SHAPE)
    assert strided.classes[0].shape == (200, 32) and strided.classes[0].extent == (992, 32)


def test_vectorized_classification_matches_one_by_one():
    rng = np.random.default_rng(1)
    sels = []
    for _ in range(300):
        start = rng.integers(0, 100, 2)
        count = rng.integers(1, 4, 2)
        block = rng.integers(1, 5, 2)
        stride = block + rng.integers(0, 3, 2)
        sels.append(Selection(tuple(start), tuple(count), tuple(stride), tuple(block)))
    shape = (120, 40)
    together = classify_accesses([acc(s) for s in sels], shape)
    alone = [classify_accesses([acc(s)], shape)[0] for s in sels]
    assert together.tolist() == alone
    assert len(set(together.tolist())) >= 3


def test_summarize_counts_per_dataset_op_and_rank(tmp_path):
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path, TraceHeader(1, "h", 1, 0, 1, 0.0))
    for i, chunks in ((0, (1000, 32)), (1, None)):
        w.dataset(DatasetRecord(i, "hdf5", "3", "f.h5", f"/d{i}", SHAPE, "float32", chunks=chunks))
    for r in range(3):
        w.access(acc(Selection.box((1000 * r, 0), (1000, 32)), op=WRITE, rank=r, dt=0.5))
        w.access(acc(Selection.box((0, r), (200_000, 1)), rank=r, ds=1, dt=0.25))
    w.resizes([(0, (300_000, 32), 1.0, 1, (), 0.0)])
    w.access(acc(Selection.box((250_000, 0), (1000, 32)), op=WRITE))
    w.access(acc(Selection.box((0, 0), SHAPE)))
    w.close()
    usage = summarize(load_trace(path))
    assert [u.dataset.path for u in usage] == ["/d0", "/d1"]
    d0, d1 = usage
    assert (d0.n_reads, d0.n_writes, d0.bytes_written) == (1, 4, 4 * 4 * 32_000)
    assert d0.write_seconds == pytest.approx(1.5 + 1e-4) and d0.read_seconds == pytest.approx(1e-4)
    assert d0.writes.kind == "rows"
    # once resized to 300000 rows, reading the first 200000 is a row block, not a full scan
    assert d0.reads.kind == "rows"
    assert d0.ranks == (0, 1, 2)
    assert (d1.n_reads, d1.reads.kind, d1.reads.typical_shape) == (3, "columns", (200_000, 1))
