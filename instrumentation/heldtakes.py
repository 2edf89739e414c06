"""The C hooks' records held by the tracer's flusher from take to take until its batch is due, then folded into
runs in C (``_hotpath.fold``, instrumentation/hotpath/fold.c) and handed to the writer as the batch's few rows.

Each take (each of the flusher's passes: hub.QUIET_PASS_SECONDS) used to be decoded into columns (``decode.from_c``), and each batch
(columnar_writer.BATCH_SECONDS) joined and folded with numpy (``columns.compact_runs``): about 20 ms of the flusher's
CPU per second of a loop of 26-us h5py reads, most of it with the GIL held, and more when the machine is busy
(page faults of the large temporary arrays). Held, a take costs a copy of its heads; the fold walks the batch's
records once, without the GIL. The rows written are the same: the fold is compact_runs' rule, and a batch that
holds anything else (a resize, an irregular selection, a dataset of another number of dimensions, libhdf5's
records) is written the earlier way, its held records decoded in call order first (``expanded``).

Crash safety is unchanged: records not yet in a batch were in the writer's buffers before, they are here now; a
forced flush, the exit and SIGTERM's close hand them over (``Tracer.drain``).
"""
from __future__ import annotations

import numpy as np

from .columns import AccessColumns
from .decode import OP_RESIZE, OP_WRITE, RECORD_HEAD


class HeldTakes:
    """Accesses of one batch, as the C hooks recorded them (heads with the trace's ids and clock, their values)."""

    def __init__(self, fold, origin: float, rank: int):
        self._fold = fold
        self._origin = origin
        self._rank = rank
        self._chunks: list[tuple] = []  # (heads, (m, 4 x width) values, tids or None, clock origin to take off)
        self.rows = 0
        self.width = -1

    def hold(self, head: np.ndarray, vals: np.ndarray, tids: np.ndarray, items: list,
             uniform: int | None = None) -> bool:
        """Keep a take (``head``: RECORD_HEAD records, ``vals`` their values, ``tids`` the trace's id of each slot,
        ``items`` the Python hooks' records with their places); False, nothing kept, unless every record is a
        hyperslab access of this batch's number of dimensions (the Python hooks' as ``Tracer.hyperslab``
        queues them: a dataset's first access). ``uniform``: what the Recorder saw of ``head`` (the heads Block's
        ``uniform``: their one number of dimensions, no resize among them, else -1), so that they are not read
        here, on another core than the one that wrote them; None: read them."""
        if any(type(item) is not list for _, item in items):
            return False
        if len(head) and uniform is not None:
            width = uniform
        else:
            width = int(head["ndim"][0]) if len(head) else (len(items[0][1][2]) if items else self.width)
        if width < 0 or self.width >= 0 and width != self.width:
            return False
        if len(head) and uniform is None and ((head["ndim"] != width).any() or (head["op"] == OP_RESIZE).any()):
            return False
        if any(len(item[2]) != width for _, item in items):
            return False
        vals = vals.reshape(len(head), 4 * width)
        chunk = (head, vals, tids, self._origin)  # as taken: the fold maps slots to ids and the clock (no copy)
        if items:  # a dataset's first access: the take on the trace's ids and clock, the Python hooks' rows put in
            own = head.copy()
            own["t0"] -= self._origin
            own["slot"] = tids[own["slot"]]
            chunk = (*_with_items(own, vals, items, width), None, 0.0)
        self._chunks.append(chunk)
        self.rows += len(chunk[0])
        self.width = width
        return True

    def take(self, folded: bool) -> AccessColumns | None:
        """The held accesses as columns, then none held: ``folded``, runs folded as the writer folds a batch
        (the batch holds nothing else); else one row per access (the writer folds them with the rest)."""
        chunks, width = self._chunks, self.width
        self._chunks, self.rows, self.width = [], 0, -1
        if not chunks:
            return None
        if not folded:
            return AccessColumns.concat(_columns(h["slot"] if tids is None else tids[h["slot"]], h["t0"] - origin, h,
                                                 v.reshape(len(h), 4, width), self._rank)
                                        for h, v, tids, origin in chunks)
        heads, vals, rep, dt, t_step, step = self._fold(chunks, width)
        head = np.frombuffer(heads, RECORD_HEAD)
        m = len(head)
        cols = _columns(head["slot"], head["t0"], head, np.frombuffer(vals, np.int64).reshape(m, 4, width), self._rank)
        return cols._with(rep=np.frombuffer(rep, np.int64), dt=np.frombuffer(dt, np.float64),
                          t_step=np.frombuffer(t_step, np.float64), step=np.frombuffer(step, np.int64).reshape(m, width))

    def clear(self) -> None:
        """Forget what is held (a forked child: its parent writes these)."""
        self._chunks, self.rows, self.width = [], 0, -1


def _columns(ds: np.ndarray, t0: np.ndarray, head: np.ndarray, v: np.ndarray, rank: int) -> AccessColumns:
    """Accesses of held heads (``ds`` their dataset ids, ``t0`` on the trace's clock) and their (m, 4, width)
    values (as ``decode.from_c`` makes them)."""
    start, count, stride, block = (np.ascontiguousarray(v[:, d]) for d in range(4))
    return AccessColumns.slabs(ds, head["op"] == OP_WRITE, (start, count, stride, block), head["n"],
                               head["nbytes"], t0, head["dt"], rank, head["ndim"])


def _with_items(head: np.ndarray, vals: np.ndarray, items: list, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The Python hooks' hyperslab rows ([tid, is_write, start, count, stride, block, n, nbytes, t0, dt], the trace's
    clock) put among the C hooks' records at their places (``p``: after the first p of them)."""
    rows = [item for _, item in items]
    extra = np.zeros(len(rows), RECORD_HEAD)
    extra["slot"] = [r[0] for r in rows]
    extra["op"] = [OP_WRITE if r[1] else 0 for r in rows]
    extra["ndim"] = width
    extra["n"] = [r[6] for r in rows]
    extra["nbytes"] = [r[7] for r in rows]
    extra["t0"] = [r[8] for r in rows]
    extra["dt"] = [r[9] for r in rows]
    extra_vals = np.array([tuple(r[2]) + tuple(r[3]) + tuple(r[4]) + tuple(r[5]) for r in rows], np.int64)
    at = [p for p, _ in items]
    return np.insert(head, at, extra), np.insert(vals, at, extra_vals.reshape(len(rows), 4 * width), axis=0)


__all__ = ["HeldTakes"]
