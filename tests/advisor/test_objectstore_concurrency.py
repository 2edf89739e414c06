"""Object-store advice with calls in flight (dask threads) and programs whose blocks follow the chunk grid."""
from __future__ import annotations

import numpy as np

from advisor.objectstore import StoreLayout, _boxes, calls_in_flight, price, traced_wall
from advisor.objectstore_tiles import follows_chunks
from instrumentation.columns import AccessColumns, compact_runs
from instrumentation.records import AccessRecord, Selection
from iomodel.objectstore import ObjectStoreModel

MODEL = ObjectStoreModel(ttfb=0.03, request_bandwidth=1e8, aggregate_bandwidth=4e8, request_cpu=0.002)


def _cols(boxes, t_starts=None, duration=0.01):
    t_starts = t_starts if t_starts is not None else [float(i) for i in range(len(boxes))]
    recs = [AccessRecord(0, "read", Selection(start, count, (1,) * len(start), (1,) * len(start)),
                         int(np.prod(count)), int(np.prod(count)) * 4, t, duration)
            for (start, count), t in zip(boxes, t_starts)]
    return AccessColumns.from_records(recs)


def _dask_blocks(shape=(2000, 1000), block=(500, 500)):
    return [((i, j), (min(block[0], shape[0] - i), min(block[1], shape[1] - j)))
            for i in range(0, shape[0], block[0]) for j in range(0, shape[1], block[1])]


def test_calls_in_flight_overlap_first_bytes_not_bytes():
    """Four dask threads share the store's bandwidth and the client's CPU: only the first byte overlaps."""
    shape = (2000, 1000)
    boxes, writes, weights = _boxes(_cols(_dask_blocks(shape)))
    lay = StoreLayout("zarr", (250, 250))
    one = price(lay, boxes, writes, weights, shape, 4, 1.0, MODEL, inflight=1.0)
    four = price(lay, boxes, writes, weights, shape, 4, 1.0, MODEL, inflight=4.0)
    assert four.terms["client"] == one.terms["client"]  # CPU per request
    assert four.terms["transfer"] >= four.bytes_moved / MODEL.aggregate_bandwidth  # the shared bandwidth
    assert four.terms["first byte"] < one.terms["first byte"]


def test_h5py_calls_never_overlap():
    """h5py's global lock holds through a read, the file object's callbacks included: threads do not help."""
    shape = (2000, 1000)
    boxes, writes, weights = _boxes(_cols(_dask_blocks(shape)))
    lay = StoreLayout("hdf5", (250, 250), block_size=2**20, cache_type="none")
    one = price(lay, boxes, writes, weights, shape, 4, 1.0, MODEL, inflight=1.0)
    four = price(lay, boxes, writes, weights, shape, 4, 1.0, MODEL, inflight=4.0)
    assert four.seconds == one.seconds


def test_dask_blocks_follow_each_layouts_chunks():
    """from_zarr-like blocks of 2x2 chunks over the whole array: in 1000x1000 chunks the same program reads 2000x1000
    blocks, each byte once, not a whole 1000x1000 chunk for every 500x500 block."""
    shape = (2000, 1000)
    boxes, writes, weights = _boxes(_cols(_dask_blocks(shape)))
    follow = follows_chunks(boxes, writes, weights, (250, 250), shape)
    assert follow is not None and follow.multiple == (2, 2)
    b, w, wt = follow.tiles((1000, 1000), shape)
    assert len(b) == 1 and [len(x) for x in b[0]] == [2000, 1000]
    big = StoreLayout("zarr", (1000, 1000))
    retiled = price(big, b, w, wt, shape, 4, 1.0, MODEL)
    traced = price(big, boxes, writes, weights, shape, 4, 1.0, MODEL)
    assert retiled.bytes_moved == 2000 * 1000 * 4 and traced.bytes_moved >= 4 * retiled.bytes_moved
    probed = _boxes(_cols([((0, 0), (1, 1))] + _dask_blocks(shape)))  # dask reads x[:1, :1] for the dtype first
    assert follows_chunks(*probed, (250, 250), shape).multiple == (2, 2)
    same, *_ = follow.tiles((250, 250), shape)  # the current layout gives back the traced blocks
    assert sorted((int(x[0][0]), int(x[1][0])) for x in same) == sorted((int(d[0][0]), int(d[1][0])) for d in boxes)


def test_reads_here_and_there_do_not_follow_the_grid():
    shape = (2000, 2000)
    columns = _boxes(_cols([((0, j), (2000, 1)) for j in range(0, 2000, 100)]))
    assert follows_chunks(*columns, (100, 100), shape) is None  # one column: not a whole chunk wide
    few = _boxes(_cols([((0, 0), (100, 100)), ((500, 700), (100, 100))]))
    assert follows_chunks(*few, (100, 100), shape) is None  # aligned, but two of 400 blocks: not a pass


def test_traced_wall_time_of_calls_in_flight_counts_overlaps_once():
    """Four calls at once, 1 s each: the traced calls took 1 s of wall time with 4 in flight, not 1/4 s nor 4 s."""
    blocks = _dask_blocks((2000, 1000))[:4]
    cols = _cols(blocks, t_starts=[0.0] * 4, duration=1.0)
    assert calls_in_flight(cols) == 4.0 and abs(traced_wall(cols, calls_in_flight(cols)) - 1.0) < 1e-9


def test_dask_threads_alike_reads_folded_into_a_run_are_not_counted_rep_times():
    """Four dask threads read four blocks down a column at the same moment, 1 s each: the trace folds them into one
    run (``compact_runs``: constant step, ``dt`` the run's total 4 s). Its span is 1 s with 4 calls in flight; the
    run's total taken as its span (and multiplied by ``rep`` again) made it 4 s wall, 16 in flight."""
    shape = (2000, 500)
    blocks = [((i, 0), (500, 500)) for i in range(0, 2000, 500)]
    cols = compact_runs(_cols(blocks, t_starts=[0.0, 0.001, 0.002, 0.003], duration=1.0))
    assert cols.rows == 1 and cols.rep[0] == 4  # folded into one run, as the tracer writes dask's reads
    inflight = calls_in_flight(cols)
    assert abs(inflight - 4.0) < 0.05 and abs(traced_wall(cols, inflight) - 1.003) < 1e-6
    boxes, writes, weights = _boxes(cols)
    assert weights.sum() == 4  # and the pricing still sees four reads
    now = price(StoreLayout("zarr", (250, 250)), boxes, writes, weights, shape, 4, 1.0, MODEL, inflight)
    assert now.requests == 4 * 4
