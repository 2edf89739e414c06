"""The chunk-cache memory a real program can give each dataset (issue 30, ``--cache-budget``).

A process has one budget (default ``CACHE_BUDGET``, 64 MiB), shared by the
datasets it holds open at the same time. What the trace shows of that: per
process (its ``rank`` and, within the rank, its ``proc``: every MPI rank and
every followed worker process, DataLoader or pool workers, holds its own caches,
so the budget is counted once per process that opens the file), the span from a
dataset's first access to the end of its last; datasets whose spans overlap in
one process are open together, datasets open at once in different processes
are not (each process has its own budget). Where the trace recorded the process's
opens and closes (``instrumentation.opens``), a dataset holds its cache per open span,
from the span's first access to its close (to the end when never closed). Traces without the ``proc`` column
(before followed processes were told apart) count a rank's workers as one
process. Each dataset gets ``budget / n`` where ``n`` is the largest number of datasets open
together at any moment of its span (at least ``MIN_CACHE_SHARE``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.candidates import CACHE_BUDGET, MIN_CACHE_SHARE
from instrumentation.opens import close_times, recorded_processes
from iomodel.layout import format_bytes


@dataclass(frozen=True)
class CacheShare:
    """One dataset's chunk-cache allowance: ``bytes`` of the process's ``budget`` (None: no budget)."""

    bytes: int | None
    budget: int | None

    def describe(self) -> str:
        if self.bytes is None or self.budget is None:
            return "no chunk-cache budget"
        n = max(1, round(self.budget / max(self.bytes, 1)))
        shared = f", shared by {n} datasets open together" if n > 1 else ""
        return (f"chunk caches up to {format_bytes(self.bytes)} (a budget of {format_bytes(self.budget)} per "
                f"process{shared}; --cache-budget)")

    def get_config(self) -> dict:
        return {"bytes": self.bytes, "budget": self.budget}

    @classmethod
    def from_config(cls, c: dict) -> "CacheShare":
        return cls(c.get("bytes"), c.get("budget"))


def open_spans(cols, closes=None) -> dict[tuple[tuple[int, int], int, int], tuple[float, float]]:
    """((rank, process), dataset, open span) -> (start, end) of the trace's AccessColumns ``cols`` (process:
    ``AccessColumns.proc``; open span: ``AccessColumns.epoch``): from the span's first access start to the end of
    its last access, or, where ``closes`` (``instrumentation.opens.close_times``, of the processes whose opens were
    recorded) has the process's, to the close that ended the span (the cache is held until then; never closed:
    to the end)."""
    if not cols.rows:
        return {}
    end = cols.t0 + np.where(cols.rep > 1, cols.t_step * (cols.rep - 1), 0.0) + cols.dt
    order = np.lexsort((cols.epoch, cols.ds, cols.proc, cols.rank))
    rank, proc, ds, epoch = cols.rank[order], cols.proc[order], cols.ds[order], cols.epoch[order]
    cuts = np.flatnonzero((np.diff(rank) != 0) | (np.diff(proc) != 0) | (np.diff(ds) != 0)
                          | (np.diff(epoch) != 0)) + 1
    first = np.r_[0, cuts]
    lo = np.minimum.reduceat(cols.t0[order], first)
    hi = np.maximum.reduceat(end[order], first)
    out = {}
    for r, p, d, e, a, b in zip(rank[first].tolist(), proc[first].tolist(), ds[first].tolist(),
                                epoch[first].tolist(), lo.tolist(), hi.tolist()):
        if closes is not None and (r, p) in closes.recorded:
            times = closes.get((r, p, d), ())
            b = max(b, float(times[e])) if e < len(times) else float("inf")
        out[((r, p), d, e)] = (a, b)
    return out


def concurrent_datasets(spans: dict[tuple[tuple[int, int], int, int], tuple[float, float]]) -> dict[int, int]:
    """Per dataset: the most datasets one process held open together during its spans (itself included),
    over the processes that accessed it (``spans``: ``open_spans``'s)."""
    by_process: dict[tuple[int, int], list[tuple[int, float, float]]] = {}
    for (process, ds, _), (a, b) in spans.items():
        by_process.setdefault(process, []).append((ds, a, b))
    out: dict[int, int] = {}
    for items in by_process.values():
        for ds, a, b in items:
            # the most datasets with a span open at one instant inside [a, b]: test at each span start inside it
            starts = [max(a, a2) for _, a2, b2 in items if a2 <= b and b2 >= a]
            most = max(len({d2 for d2, a2, b2 in items if a2 <= t <= b2}) for t in starts)
            out[ds] = max(out.get(ds, 1), most)
    return out


class _Closes(dict):
    """``close_times`` with the (rank, process) pairs whose opens were recorded (``recorded``)."""

    recorded: set


def cache_shares(cols, budget: int | None = CACHE_BUDGET, opens=(), datasets=None) -> dict[int, int]:
    """Dataset id -> chunk-cache bytes it may hold: ``budget`` shared by the datasets open with it (None: no
    budget, every dataset absent from the result). ``opens`` (the trace's ``OpenRecord``s, with its ``datasets``):
    the processes whose opens were recorded hold a dataset's cache from its open span's first access to its close;
    the others' spans are their accesses'."""
    if budget is None:
        return {}
    closes = None
    if opens and datasets is not None:
        closes = _Closes(close_times(opens, datasets))
        closes.recorded = recorded_processes(opens)
    together = concurrent_datasets(open_spans(cols, closes))
    return {ds: max(int(budget) // n, min(MIN_CACHE_SHARE, int(budget))) for ds, n in together.items()}


__all__ = ["CacheShare", "cache_shares", "concurrent_datasets", "open_spans"]
