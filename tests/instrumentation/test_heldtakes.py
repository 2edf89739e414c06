"""The tracer's held takes (instrumentation/heldtakes.py): the C fold of a batch's records keeps exactly the rows
``columns.compact_runs`` keeps, and a traced loop's batches are written from it."""
import numpy as np
import pytest

import advisor
from instrumentation import tracer as tracer_module
from instrumentation.columns import ARRAYS, compact_runs
from instrumentation.decode import RECORD_HEAD
from instrumentation.heldtakes import HeldTakes

fold = getattr(tracer_module.hotpath, "fold", None)
pytestmark = pytest.mark.skipif(fold is None, reason="no C compiler built instrumentation._hotpath")

ORIGIN = 12345.678


def _take(rng, m: int, width: int):
    """A take of ``m`` accesses in runs, breaks and clashes: (heads, vals, tids)."""
    head = np.zeros(m, RECORD_HEAD)
    vals = np.zeros((m, 4, width), np.int64)
    start = rng.integers(0, 50, width)
    step = rng.integers(-2, 3, width)
    slot, op, count = 0, 0, rng.integers(1, 3, width)
    for i in range(m):
        r = rng.random()
        if r < 0.15:  # another offset: the segment breaks, the next may clash with it
            step = rng.integers(-2, 3, width)
        elif r < 0.2:
            slot = int(rng.integers(0, 3))
        elif r < 0.23:
            op = 1 - op
        elif r < 0.26:
            count = rng.integers(1, 3, width)
        start = start + step
        vals[i] = [start, count, np.ones(width, np.int64), np.full(width, 2)]
        n = int(np.prod(count) * 2 ** width)
        head[i] = (ORIGIN + 0.001 * i + rng.random() * 1e-4, rng.random() * 1e-5, n, 4 * n, slot, op, width, 0)
    return head, vals.reshape(-1), np.array([7, 3, 7], np.int32)  # two slots, one dataset id: they fold together


@pytest.mark.parametrize("seed", range(12))
def test_the_fold_keeps_the_rows_compact_runs_keeps(seed):
    rng = np.random.default_rng(seed)
    width = int(rng.integers(1, 4))
    held, copy = HeldTakes(fold, ORIGIN, rank=2), HeldTakes(fold, ORIGIN, rank=2)
    for _ in range(int(rng.integers(1, 6))):
        head, vals, tids = _take(rng, int(rng.integers(0, 400)), width)
        # a dataset's first access, recorded by the Python hooks, among the C hooks' records
        items = [(int(rng.integers(0, len(head) + 1)), [3, False, (1,) * width, (1,) * width, (1,) * width,
                                                        (2,) * width, 2 ** width, 4 * 2 ** width, 0.5, 1e-6])]
        items = items if rng.random() < 0.5 else []
        assert held.hold(head, vals, tids, items) and copy.hold(head, vals, tids, items)
    want = compact_runs(copy.take(folded=False))  # what the writer wrote of these before
    got = held.take(folded=True)
    assert held.rows == 0 and held.take(folded=True) is None
    assert got.rows == want.rows and got.rows <= want.n_access
    for name in ARRAYS:  # the same rows, the same values to the last bit
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.rank.tolist() == [2] * got.rows


def test_a_take_the_fold_cannot_hold_is_refused_whole():
    held = HeldTakes(fold, ORIGIN, rank=0)
    head, vals, tids = _take(np.random.default_rng(1), 50, 2)
    assert held.hold(head, vals, tids, [])
    other, other_vals, _ = _take(np.random.default_rng(2), 10, 3)
    assert not held.hold(other, other_vals, tids, [])  # another number of dimensions: the batch's fold is over
    resize = head.copy()
    resize["op"][5] = 2
    assert not held.hold(resize, vals, tids, [])
    assert not held.hold(head, vals, tids, [(3, object())])  # an irregular selection, a resize of the Python hooks
    assert held.rows == 50


def test_a_traced_loop_is_written_in_runs_and_read_back_whole(tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = f.create_dataset("x", data=np.arange(10000.0).reshape(100, 100), chunks=(10, 10))
        with advisor.trace(tmp_path / "t.parquet") as t:
            for i in range(3000):
                ds[i % 100, 0:5]
            ds[[1, 4], 0]  # an irregular selection after them: the held records go first
            t.flush()
            for _ in range(500):
                ds[0:1, 0:1]
    tr = t.load()
    assert tr.n_access == 3501
    assert tr.columns.rows < 50  # runs folded: 30 strided scans, one irregular read, one run of 500
    starts = tr.columns.expanded().start[:, 0].tolist()
    assert starts[:3000] == [i % 100 for i in range(3000)] and starts[3000] == 1 and set(starts[3001:]) == {0}


def test_a_take_hands_its_buffers_over_and_the_recorder_carries_on_in_others(tmp_path, monkeypatch):
    h5py = pytest.importorskip("h5py")
    from instrumentation import hub

    monkeypatch.setattr(hub, "FLUSH_INTERVAL", 3600.0)  # no take but these
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = f.create_dataset("x", data=np.zeros((1000, 4)), chunks=(10, 4))
        with advisor.trace(tmp_path / "t.parquet") as t:
            ds[0, 0:2]  # the first access: the Python hooks describe the dataset
            t.flush()
            kept = []
            for k in range(12):  # more takes than the pool holds buffers
                for i in range(300):
                    ds[k * 50 + i % 50, 0:2]
                heads, dims, _, _ = t.recorder.take()
                head = np.frombuffer(heads, RECORD_HEAD)
                vals = np.frombuffer(dims, np.int64).reshape(-1, 4, 2)
                assert len(head) == 300 and vals[:, 0, 0].tolist() == [k * 50 + i % 50 for i in range(300)]
                if k % 3:
                    kept.append((k, vals))  # held while later takes reuse the others' memory
            for k, vals in kept:
                assert vals[:, 0, 0].tolist() == [k * 50 + i % 50 for i in range(300)]


def test_a_take_tells_the_one_number_of_dimensions_of_its_records(tmp_path, monkeypatch):
    """The heads' ``uniform`` spares the flusher reading them: it must be what a scan of them would find."""
    h5py = pytest.importorskip("h5py")
    from instrumentation import hub

    monkeypatch.setattr(hub, "FLUSH_INTERVAL", 3600.0)  # no take but these
    with h5py.File(tmp_path / "a.h5", "w") as f:
        two = f.create_dataset("x", data=np.zeros((100, 4)), chunks=(10, 4), maxshape=(None, 4))
        one = f.create_dataset("y", data=np.zeros(100), chunks=(10,))
        with advisor.trace(tmp_path / "t.parquet") as t:
            two[0, 0:2], one[0:2], two.resize((120, 4)), two.resize((130, 4))  # first sights: the Python hooks
            t.flush()
            found = []
            for work in ([lambda: two[1, 0:2]] * 3, [lambda: one[3]] * 2, [lambda: two[1, 1], lambda: one[3]],
                         [lambda: two[2, 2], lambda: two.resize((140, 4))], []):
                for call in work:
                    call()
                heads, _, _, _ = t.recorder.take()  # (these records are not written)
                head = np.frombuffer(heads, RECORD_HEAD)
                found.append((heads.uniform, sorted(set(head["ndim"].tolist())), int((head["op"] == 2).sum())))
            for _ in range(3000):  # and a loop with a mixed take among its batch's is written whole
                two[5, 0:4]
            one[7]
            two.resize((150, 4))
            for _ in range(100):
                two[6, 0:4]
    assert found == [(2, [2], 0), (1, [1], 0), (-1, [1, 2], 0), (-1, [2], 1), (-2, [], 0)]
    tr = t.load()
    starts = tr.columns.expanded().start[:, 0].tolist()
    assert tr.n_access == 2 + 3000 + 1 + 100 and starts[-3101:] == [5] * 3000 + [7] + [6] * 100
