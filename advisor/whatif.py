"""What-if rewrites of the program's own accesses, replayed through the same (calibrated) model.

When the time goes into per-call library overhead (one call per sample, as a
PyTorch ``Dataset.__getitem__`` makes), no layout can remove it: the program
has to make fewer calls. Two rewrites are modelled on the recorded layout:

- ``batched``: one sorted fancy-index read per mini-batch of ``BATCH``
  consecutive single-index reads (``ds[sorted(indices)]``, then reorder in
  memory);
- ``whole-chunks``: each read replaced by reads of the whole chunks it touches,
  which the program keeps in memory (up to ``CHUNK_MEMORY``, least recently
  used dropped first) and slices there.

``ioadvisor verify`` replays the same rewritten accesses for real.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import replace
from typing import Sequence

import numpy as np

from instrumentation.records import READ, AccessRecord, Selection
from instrumentation.tracefile import Trace

from advisor.results import KINDS, WhatIf
from advisor.tuning import BATCH, CALL_DOMINATES, CHUNK_MEMORY, SINGLE_INDEX_SHARE


def _single_index(sel: Selection) -> bool:
    return sel.kind == "hyperslab" and sel.ndim >= 1 and sel.count[0] == 1 and sel.block[0] == 1


def batched(accesses: Sequence[AccessRecord], batch: int = BATCH) -> list[AccessRecord] | None:
    """The reads as one sorted index list per ``batch`` consecutive single-index reads (per process: rank and
    ``AccessRecord.process``); None when the program does not read single indices."""
    reads = [a for a in accesses if a.op == READ]
    single = [a for a in reads if _single_index(a.selection)]
    if len(reads) < 2 * batch or len(single) < SINGLE_INDEX_SHARE * len(reads):
        return None
    out = [a for a in accesses if not (a.op == READ and _single_index(a.selection))]
    by_process: dict[tuple[int, int], list[AccessRecord]] = {}
    for a in sorted(single, key=lambda a: a.t_start):
        by_process.setdefault((a.rank, a.process), []).append(a)
    for (rank, process), mine in by_process.items():
        for i in range(0, len(mine), batch):
            group = mine[i:i + batch]
            rows = sorted({a.selection.start[0] for a in group})  # h5py takes increasing indices only
            lo = [min(a.selection.bounds()[0][d] for a in group) for d in range(group[0].selection.ndim)]
            hi = [max(a.selection.bounds()[1][d] for a in group) for d in range(group[0].selection.ndim)]
            nd = len(lo)
            sel = Selection((rows[0],) + tuple(lo[1:]), (len(rows),) + (1,) * (nd - 1), (1,) * nd,
                            (1,) + tuple(h - l for l, h in zip(lo[1:], hi[1:])),
                            indices=(tuple(rows),) + (None,) * (nd - 1))
            n = sel.nelements
            itemsize = group[0].nbytes // max(group[0].nelements, 1)
            out.append(AccessRecord(group[0].dataset, READ, sel, n, n * itemsize, group[0].t_start,
                                    sum(a.duration for a in group), rank, process=process))
    return sorted(out, key=lambda a: a.t_start)


def whole_chunks(accesses: Sequence[AccessRecord], chunks: Sequence[int] | None, shape: Sequence[int],
                 itemsize: int, memory: int = CHUNK_MEMORY) -> list[AccessRecord] | None:
    """The reads as reads of the whole chunks they touch, each chunk read again only after it fell out of
    ``memory`` (per process: rank and ``AccessRecord.process``); None for a contiguous layout or when chunks do not fit in memory."""
    if chunks is None:
        return None
    chunk_bytes = math.prod(chunks) * itemsize
    slots = memory // max(chunk_bytes, 1)
    if slots < 1:
        return None
    out = []
    held: dict[tuple[int, int], OrderedDict] = {}
    for a in sorted(accesses, key=lambda a: a.t_start):
        if a.op != READ:
            out.append(a)
            continue
        lru = held.setdefault((a.rank, a.process), OrderedDict())
        lo, hi = a.selection.bounds()
        grid = [range(l // c, -(-h // c)) for l, h, c in zip(lo, hi, chunks)]
        for idx in np.ndindex(*[len(g) for g in grid]):
            key = tuple(g[i] for g, i in zip(grid, idx))
            if key in lru:
                lru.move_to_end(key)
                continue
            lru[key] = True
            if len(lru) > slots:
                lru.popitem(last=False)
            start = tuple(k * c for k, c in zip(key, chunks))
            box = tuple(min(c, s - st) for c, s, st in zip(chunks, shape, start))
            n = math.prod(box)
            out.append(AccessRecord(a.dataset, READ, Selection.box(start, box), n, n * itemsize, a.t_start,
                                    0.0, a.rank, process=a.process))
    return out


def rewrites(accesses: Sequence[AccessRecord], chunks: Sequence[int] | None, shape: Sequence[int],
             itemsize: int) -> dict[str, list[AccessRecord]]:
    """Every rewrite that applies to these accesses: {kind: rewritten accesses}."""
    out = {}
    b = batched(accesses)
    if b is not None:
        out["batched"] = b
    w = whole_chunks(accesses, chunks, shape, itemsize)
    if w is not None and len(w) < len(accesses):
        out["whole-chunks"] = w
    return out


def rewritten_trace(trace: Trace, dataset_id: int, accesses: Sequence[AccessRecord]) -> Trace:
    """``trace`` with one dataset's accesses replaced (for replaying a rewrite)."""
    others = [a for a in trace.accesses if a.dataset != dataset_id]
    return replace(trace, accesses=others + list(accesses))


def predict_rewrites(ds, accesses, shape, profile, current, procs: int = 1, calibration=None) -> tuple[WhatIf, ...]:
    """Each applicable rewrite replayed through the cost model on the current layout."""
    from advisor.costmodel import CostModel

    out = []
    for kind, accs in rewrites(accesses, current.candidate.chunks, shape, ds.itemsize).items():
        r = CostModel(ds, accs, shape, profile, procs=procs, calibration=calibration).evaluate(current.candidate)
        out.append(WhatIf(kind, r.seconds, r.seconds_ci, len(accs), dict(r.terms)))
    return tuple(out)


__all__ = ["BATCH", "CALL_DOMINATES", "CHUNK_MEMORY", "KINDS", "WhatIf", "batched", "predict_rewrites",
           "rewrites", "rewritten_trace", "whole_chunks"]
