import numpy as np
import pytest

from advisor.api import advise
from advisor.budget import cache_shares
from advisor.candidates import hdf5_caches
from instrumentation.columns import AccessColumns
from instrumentation.patterns import classify
from instrumentation.records import AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import Trace

MiB = 1 << 20


def acc(ds, start, shape, t, rank=0, op="read", dt=1e-3):
    s = Selection.box(start, shape)
    return AccessRecord(ds, op, s, s.nelements, s.nelements * 4, t, dt, rank)


def test_the_budget_is_shared_by_the_datasets_open_together_in_one_process():
    a = [acc(0, (i, 0), (1, 8), 0.1 * i) for i in range(10)]           # open 0-0.9 s
    b = [acc(1, (i, 0), (1, 8), 0.5 + 0.1 * i) for i in range(10)]     # 0.5-1.4 s: overlaps a
    c = [acc(2, (i, 0), (1, 8), 5.0 + 0.1 * i) for i in range(10)]     # later, alone
    d = [acc(3, (i, 0), (1, 8), 0.1 * i, rank=1) for i in range(10)]   # another process: its own budget
    shares = cache_shares(AccessColumns.from_records(a + b + c + d), 64 * MiB)
    assert shares == {0: 32 * MiB, 1: 32 * MiB, 2: 64 * MiB, 3: 64 * MiB}
    assert cache_shares(AccessColumns.from_records(a), None) == {}


def test_no_cache_variant_exceeds_the_budget():
    shape = (4000, 4000)
    pat = classify([acc(0, (0, j), (4000, 1), 0.0) for j in range(0, 4000, 97)], shape)
    free = hdf5_caches(pat, (4000, 500), shape, 4)
    assert max(c[0] for c in free) > 8 * MiB  # the working set (8 MB chunks) asks for more than the default
    for budget in (64 * MiB, 4 * MiB):
        caches = hdf5_caches(pat, (4000, 500), shape, 4, budget)
        assert caches and all(c[0] <= budget for c in caches)
    small = hdf5_caches(pat, (4000, 500), shape, 4, 4 * MiB)
    assert (4 * MiB) in [c[0] for c in small]  # the default 8 MiB becomes the budget


@pytest.mark.parametrize("budget", [2 * MiB, 16 * MiB])
def test_advise_never_recommends_a_cache_above_the_budget(budget):
    shape = (20000, 256)
    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/x", shape, "float32", chunks=(20000, 1))
    rng = np.random.default_rng(0)
    accs = [acc(0, (int(r), 0), (64, 256), 0.01 * k) for k, r in enumerate(rng.integers(0, 19900, 300))]
    trace = Trace([TraceHeader(1, "h", 1, 0, 1, 0.0)], {0: ds}, accs)
    adv = advise(trace, cache_budget=budget, read_data=False, jobs=1).datasets[0]
    for r in (adv.recommendation,) + adv.candidates:
        if r.library == "hdf5" and r.candidate.chunks is not None and r.candidate != adv.current.candidate:
            assert (r.candidate.cache_bytes or 0) <= budget, r.label
    assert any("--cache-budget" in n for n in adv.notes)


def test_a_time_series_grows_along_its_time_axis():
    from advisor.robust import growth_factors, grown

    shape = (365, 180, 360)
    cols = AccessColumns.from_records([acc(0, (0, i, j), (365, 1, 1), 0.01 * i) for i, j in ((3, 5), (90, 200))])
    f = growth_factors(cols, shape)
    assert f == (16, 1, 1)
    big, new_shape = grown(cols, shape, f)
    assert new_shape == (5840, 180, 360)
    assert (big.block[:, 0] * big.count[:, 0] == 5840).all() and (big.nbytes == 5840 * 4).all()
    rows = AccessColumns.from_records([acc(0, (r, 0), (64, 32), 0.0) for r in (0, 5000, 9000)])
    f = growth_factors(rows, (10000, 32))
    assert f == (16, 1)
    big, _ = grown(rows, (10000, 32), f)
    assert big.start[:, 0].tolist() == [0, 80000, 144000] and (big.count[:, 0] * big.block[:, 0] == 64).all()


def test_a_table_read_row_by_row_grows_in_rows_not_in_the_fields_a_row_covers():
    """A row read covers the row's 32 fields, but the rows its starts spread over are the table's long axis:
    the table grows in records (regret's w04, w13)."""
    from advisor.robust import growth_factors

    rng = np.random.default_rng(2)
    rows = AccessColumns.from_records([acc(0, (int(r), 0), (1, 32), 0.0) for r in rng.integers(0, 125000, 80)])
    assert growth_factors(rows, (125000, 32)) == (16, 1)
    batches = AccessColumns.from_records([acc(0, (int(r), 0), (64, 128), 0.0) for r in rng.integers(0, 99000, 50)])
    assert growth_factors(batches, (100000, 128)) == (16, 1)
    # a column read of a square image still grows along the rows it covers, a time series along its time axis
    # even where the map is larger, and a box read that covers trailing axes but not thinly along the others as before
    cols = AccessColumns.from_records([acc(0, (0, int(c)), (2000, 1), 0.0) for c in rng.integers(0, 2000, 8)])
    assert growth_factors(cols, (2000, 2000)) == (16, 1)
    series = AccessColumns.from_records([acc(0, (0, int(i), int(j)), (128, 1, 1), 0.0)
                                         for i, j in zip(rng.integers(0, 128, 8), rng.integers(0, 256, 8))])
    assert growth_factors(series, (128, 128, 256)) == (16, 1, 1)
    blocks = AccessColumns.from_records([acc(0, (t, y, x), (73, 90, 180), 0.0)
                                         for t in (0, 73) for y in (0, 90) for x in (0, 180)])
    assert growth_factors(blocks, (146, 180, 360)) == (1, 1, 16)


def test_a_winner_that_holds_the_whole_array_in_its_cache_gives_way_at_size():
    from advisor.candidates import Candidate
    from advisor.robust import at_size
    from advisor.search import CostModel
    from iomodel import load_profile

    shape = (365, 180, 360)
    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/t", shape, "float32")
    rng = np.random.default_rng(1)
    accs = [acc(0, (0, int(i), int(j)), (365, 1, 1), 0.01 * k)
            for k, (i, j) in enumerate(zip(rng.integers(0, 180, 40), rng.integers(0, 360, 40)))]
    model = CostModel(ds, accs, shape, load_profile(), jobs=1)
    whole = model.evaluate(Candidate("hdf5", (365, 90, 180), cache_bytes=128 * MiB, cache_slots=8191))
    pencil = model.evaluate(Candidate("hdf5", (365, 10, 10), cache_bytes=8 * MiB, cache_slots=8191))
    sized = at_size(model, whole, [whole, pencil])
    assert sized.replaced == whole.candidate and sized.chosen.candidate == pencil.candidate
    assert "16x larger" in sized.line
    assert at_size(model, pencil, [pencil, whole]).replaced is None


def test_at_size_weighs_a_loss_now_and_a_loss_at_size_alike():
    """Minimax regret over the two sizes: a robust layout predicted 1.3x slower now still replaces a winner that
    loses far more at 16x the size; one slower now than the winner would be at size does not."""
    from dataclasses import replace

    from advisor.candidates import Candidate
    from advisor.robust import at_size
    from advisor.search import CostModel
    from iomodel import load_profile

    shape = (365, 180, 360)
    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/t", shape, "float32")
    rng = np.random.default_rng(1)
    accs = [acc(0, (0, int(i), int(j)), (365, 1, 1), 0.01 * k)
            for k, (i, j) in enumerate(zip(rng.integers(0, 180, 40), rng.integers(0, 360, 40)))]
    model = CostModel(ds, accs, shape, load_profile(), jobs=1)
    whole = model.evaluate(Candidate("hdf5", (365, 90, 180), cache_bytes=128 * MiB, cache_slots=8191))
    pencil = model.evaluate(Candidate("hdf5", (365, 10, 10), cache_bytes=8 * MiB, cache_slots=8191))
    first = at_size(model, whole, [whole, pencil])
    loss = first.seconds[whole.candidate] / first.seconds[pencil.candidate]  # the winner's at 16x the size
    assert loss > 1.5
    slower_now = replace(pencil, seconds=whole.seconds * 1.3)  # outside a 1.25x window at the traced size
    assert at_size(model, whole, [whole, slower_now]).replaced == whole.candidate
    too_slow_now = replace(pencil, seconds=whole.seconds * loss * 1.1)
    assert at_size(model, whole, [whole, too_slow_now]).replaced is None


def test_only_a_layout_holding_the_array_in_one_chunk_or_its_cache_relies_on_its_fit():
    from advisor.candidates import Candidate
    from advisor.robust import relies_on_fit

    shape = (1000, 1000)  # 4 MB of float32
    assert relies_on_fit(Candidate("hdf5", (1000, 1000)), shape, 4)
    assert relies_on_fit(Candidate("hdf5", (100, 100), cache_bytes=2 << 20, cache_slots=521), shape, 4)
    assert not relies_on_fit(Candidate("hdf5", (100, 100), cache_bytes=1 << 20, cache_slots=521), shape, 4)
    assert not relies_on_fit(Candidate("hdf5", (100, 100), cache_bytes=None), shape, 4)
    assert not relies_on_fit(Candidate("hdf5", None), shape, 4)  # contiguous: reads what is selected
    assert relies_on_fit(Candidate("zarr", (1000, 600)), shape, 4) and not relies_on_fit(
        Candidate("zarr", (1000, 100)), shape, 4)


def _worker_reads(path, name, barrier):
    import h5py

    with h5py.File(path, "r") as f:
        x = f[name]
        for i in range(0, 200, 3):
            x[i]
        barrier.wait(30)  # both workers' datasets open at once
        for i in range(1, 200, 3):
            x[i]


def test_followed_workers_each_hold_their_own_caches_and_budget(tmp_path):
    """A traced program whose main process reads x, then two forked workers read x and y at the same time:
    x's chunks are loaded again by its worker (its own chunk cache), and x and y, open together but in
    different processes, each get a whole process's budget."""
    import multiprocessing as mp

    import h5py

    import advisor
    from iomodel.layout import Layout
    from iomodel.predict import Workload, pick_dataset

    data = tmp_path / "d.h5"
    with h5py.File(data, "w") as f:
        for name in ("x", "y"):
            f.create_dataset(name, data=np.arange(800.0).reshape(200, 4), chunks=(50, 4), compression="gzip")
    ctx = mp.get_context("fork")
    with advisor.trace(tmp_path / "t.parquet") as t:
        with h5py.File(data, "r") as f:
            x = f["x"]  # held: one open span (a temporary f["x"] per read would reopen x, its cache empty each time)
            for i in range(200):
                x[i]
        barrier = ctx.Barrier(2)
        workers = [ctx.Process(target=_worker_reads, args=(data, name, barrier)) for name in ("x", "y")]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert [w.exitcode for w in workers] == [0, 0]
    trace = t.load()
    assert len(trace.header.processes) == 3 and trace.nprocs == 1  # one rank, three processes
    x = pick_dataset(trace, "x")
    cols = trace.columns_of(x.id)
    y = pick_dataset(trace, "y")
    x_procs, y_procs = set(cols.proc.tolist()), set(trace.columns_of(y.id).proc.tolist())
    assert len(x_procs) == 2 and 0 in x_procs and len(y_procs) == 1 and not y_procs & x_procs
    v = Workload.of_trace(trace, x).variables(Layout.from_dataset(x), 1 << 30)[0]
    assert v.s_decode == 2 * 4 * (50 * 4 * 8)  # 4 chunks, decoded by the main process and again by its worker
    assert cache_shares(trace.columns, 64 * MiB) == {x.id: 64 * MiB, y.id: 64 * MiB}


def test_recorded_open_spans_decide_which_datasets_share_the_budget():
    """x read early and y late, in one process: by their accesses they are never open together. Recorded: x held
    open to the end shares the budget with y; x closed before y opened does not; a process without recorded
    opens keeps its access spans."""
    from instrumentation.opens import CLOSE, OPEN, OpenRecord

    x = DatasetRecord(0, "hdf5", "2", "/d/a.h5", "/x", (100, 8), "float32", chunks=(10, 8))
    y = DatasetRecord(1, "hdf5", "2", "/d/b.h5", "/y", (100, 8), "float32", chunks=(10, 8))
    datasets = {0: x, 1: y}
    cols = AccessColumns.from_records([acc(0, (i, 0), (1, 8), 0.1 * i) for i in range(5)]
                                      + [acc(1, (i, 0), (1, 8), 2.0 + 0.1 * i) for i in range(5)])
    opened = [OpenRecord("/d/a.h5", None, OPEN, 0.0), OpenRecord("/d/b.h5", None, OPEN, 1.9)]
    assert cache_shares(cols, 64 * MiB) == {0: 64 * MiB, 1: 64 * MiB}
    assert cache_shares(cols, 64 * MiB, opened, datasets) == {0: 32 * MiB, 1: 32 * MiB}
    closed = opened + [OpenRecord("/d/a.h5", None, CLOSE, 1.0)]
    assert cache_shares(cols, 64 * MiB, closed, datasets) == {0: 64 * MiB, 1: 64 * MiB}
    elsewhere = [OpenRecord(o.file, o.path, o.event, o.t_start, rank=1) for o in opened]
    assert cache_shares(cols, 64 * MiB, elsewhere, datasets) == {0: 64 * MiB, 1: 64 * MiB}


def test_advise_shares_the_budget_by_the_recorded_open_spans(tmp_path):
    """A traced program keeps a.h5 open while it reads b.h5 later: the advice's cache note says two datasets
    share the budget."""
    import h5py

    import advisor

    for name in ("a", "b"):
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            f.create_dataset(name, data=np.zeros((400, 8), "f4"), chunks=(100, 8))
    with advisor.trace(tmp_path / "t.parquet") as t:
        fa = h5py.File(tmp_path / "a.h5", "r")
        a = fa["a"]
        for i in range(0, 400, 50):
            a[i]
        with h5py.File(tmp_path / "b.h5", "r") as fb:
            b = fb["b"]
            for i in range(0, 400, 50):
                b[i]
        fa.close()
    trace = t.load()
    shares = cache_shares(trace.columns, 64 * MiB, trace.opens, trace.datasets)
    assert sorted(shares.values()) == [32 * MiB, 32 * MiB]
    assert sorted(cache_shares(trace.columns, 64 * MiB).values()) == [64 * MiB, 64 * MiB]  # by the accesses
    notes = [n for d in advise(trace, read_data=False, jobs=1).datasets for n in d.notes]
    assert sum("up to 32MiB" in n and "shared by 2 datasets open together" in n for n in notes) == 2
