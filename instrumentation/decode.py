"""What the C hooks record (``_hotpath.Recorder``'s buffers), decoded into columns; changes of extent as columns.

The tracer's flusher (instrumentation/tracer.py) and the sinks of converted libhdf5 records
(instrumentation/convertsink.py) write resizes the same way (``write_resizes``)."""
from __future__ import annotations

import numpy as np

from .columns import AccessColumns, compact_runs

OP_READ, OP_WRITE, OP_RESIZE = 0, 1, 2
"""``op`` of a record of the C hooks (``_hotpath.Hook``)."""
RECORD_HEAD = np.dtype([("t0", "<f8"), ("dt", "<f8"), ("n", "<i8"), ("nbytes", "<i8"), ("slot", "<i4"),
                        ("op", "i1"), ("ndim", "i1"), ("pad", "<i2")])
"""One record of ``_hotpath.Recorder``'s head buffer (its ``head_t``): ``t0``/``dt`` on perf_counter's clock, ``slot``
the DatasetInfo's place in the infos taken with it. Its dims buffer holds, per record, start, count, stride and
block (``ndim`` int64 each) of an access, or the ``ndim`` extents a resize set."""


def resize_columns(ds, shapes: np.ndarray, ndim, t0, rank: int) -> AccessColumns:
    """Changes of extent as columns, the new extent in ``start`` ((m, K), padded with 0): so that an append
    loop's fold into runs as its writes do (``compact_runs``)."""
    m, width = shapes.shape
    ones = np.ones((m, width), np.int64)
    return AccessColumns.slabs(ds, np.zeros(m, bool), (shapes, ones, ones, ones), np.zeros(m, np.int64),
                               np.zeros(m, np.int64), t0, np.zeros(m), rank, ndim)


def record_resizes(records, rank: int) -> AccessColumns:
    """``ResizeRecord``s (recorded in Python) as columns (``resize_columns``), in their order."""
    ndim = np.array([len(rec.shape) for rec in records], np.int64)
    shapes = np.zeros((len(records), int(ndim.max())), np.int64)
    for i, rec in enumerate(records):
        shapes[i, :ndim[i]] = rec.shape
    return resize_columns([rec.dataset for rec in records], shapes, ndim, [rec.t_start for rec in records], rank)


def write_resizes(writer, resized: AccessColumns) -> None:
    """Write changes of extent (``resize_columns``) by dataset, an append loop's folded into runs."""
    if not resized.rows:
        return
    runs = compact_runs(resized.take(np.argsort(resized.ds, kind="stable")))
    nd = runs.ndim.tolist()
    writer.resizes(list(zip(runs.ds.tolist(), [s[:k] for s, k in zip(runs.start.tolist(), nd)],
                            runs.t0.tolist(), runs.rep.tolist(),
                            [s[:k] for s, k in zip(runs.step.tolist(), nd)], runs.t_step.tolist())))


def from_c(head: np.ndarray, vals: np.ndarray, tids: np.ndarray, origin: float, rank: int):
    """What the C hooks recorded (``head``: RECORD_HEAD records, ``vals``: their dims buffer, ``tids``: the trace's
    id of each slot): (the accesses as columns, each one's place among the records, the resizes as columns
    (``resize_columns``), each one's place)."""
    m = len(head)
    if m and (head["ndim"] == head["ndim"][0]).all() and not (head["op"] == OP_RESIZE).any():
        return _accesses_alike(head, vals, tids, origin, rank)
    ndim = head["ndim"].astype(np.int64)
    resize = head["op"] == OP_RESIZE
    nvals = np.where(resize, ndim, 4 * ndim)
    first = np.cumsum(nvals) - nvals  # where each record's values begin
    resized_at = np.flatnonzero(resize)
    r_ndim = ndim[resized_at]
    shapes = np.zeros((len(resized_at), int(r_ndim.max(initial=0))), np.int64)
    for k in np.unique(r_ndim).tolist():
        rows = np.flatnonzero(r_ndim == k)
        shapes[rows, :k] = vals[first[resized_at[rows]][:, None] + np.arange(k)]
    r_head = head[resized_at]
    resized = resize_columns(tids[r_head["slot"]], shapes, r_ndim, r_head["t0"] + r_head["dt"] - origin, rank)
    position = np.flatnonzero(~resize)
    head, first, ndim = head[position], first[position], ndim[position]
    m, width = len(head), int(ndim.max(initial=0))
    start = np.zeros((m, width), np.int64)
    count, stride, block = (np.ones((m, width), np.int64) for _ in range(3))
    if m and not len(resized_at) and (ndim == width).all():  # the common case: one piece, no gather
        groups = [(width, slice(None), vals.reshape(m, 4, width))]
    else:
        groups = [(k, rows, vals[first[rows][:, None] + np.arange(4 * k)].reshape(len(rows), 4, k))
                  for k in np.unique(ndim).tolist() for rows in [np.flatnonzero(ndim == k)]]
    for k, rows, v in groups:
        for d, col in enumerate((start, count, stride, block)):
            col[rows, :k] = v[:, d]
    cols = AccessColumns.slabs(tids[head["slot"]], head["op"] == OP_WRITE, (start, count, stride, block),
                               head["n"], head["nbytes"], head["t0"] - origin, head["dt"], rank, head["ndim"])
    return cols, position, resized, resized_at


def _accesses_alike(head: np.ndarray, vals: np.ndarray, tids: np.ndarray, origin: float, rank: int):
    """``from_c`` of accesses that all have one number of dimensions and no resize among them (a loop over one
    dataset, the common case): the dims buffer is one (m, 4, ndim) array, cut into its four columns without the
    general case's gathers (a third of a drain's CPU at 5,000 records: benchmarks/speed/tracing_overhead.py)."""
    m, width = len(head), int(head["ndim"][0])
    v = vals.reshape(m, 4, width)
    start, count, stride, block = (np.ascontiguousarray(v[:, d]) for d in range(4))
    cols = AccessColumns.slabs(tids[head["slot"]], head["op"] == OP_WRITE, (start, count, stride, block),
                               head["n"], head["nbytes"], head["t0"] - origin, head["dt"], rank, head["ndim"])
    none = np.zeros(0, np.int64)
    resized = resize_columns(tids[none], np.zeros((0, 0), np.int64), none, none.astype(float), rank)
    return cols, np.arange(m), resized, none


__all__ = ["OP_READ", "OP_RESIZE", "OP_WRITE", "RECORD_HEAD", "from_c", "record_resizes", "resize_columns",
           "write_resizes"]
