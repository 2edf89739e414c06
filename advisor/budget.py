"""The chunk-cache memory a real program can give each dataset (issue 30, ``--cache-budget``).

A process has one budget (default ``CACHE_BUDGET``, 64 MiB), shared by the
datasets it holds open at the same time. What the trace shows of that: per
rank (the ``rank`` column: every MPI rank holds its own caches, so the budget is
counted once per rank that opens the file), the span from a dataset's first
access to the end of its last; datasets whose spans overlap are open together.
Followed worker processes (DataLoader or pool workers) hold their own caches
too, but write their run's rank (instrumentation/runinfo.py), so the trace does
not tell one rank's workers apart: they are counted as one process, and
datasets open at once in different workers share one budget (never above a
process's budget; stricter than each worker's own: realsize's r06, whose two
workers each open both of its datasets, gets each worker's share). Each
dataset gets ``budget / n`` where ``n`` is the largest number of datasets open
together at any moment of its span (at least ``MIN_CACHE_SHARE``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.candidates import CACHE_BUDGET, MIN_CACHE_SHARE
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


def open_spans(cols) -> dict[tuple[int, int], tuple[float, float]]:
    """(rank, dataset) -> (first access start, last access end) of the trace's AccessColumns ``cols``."""
    if not cols.rows:
        return {}
    end = cols.t0 + np.where(cols.rep > 1, cols.t_step * (cols.rep - 1), 0.0) + cols.dt
    key = cols.rank.astype(np.int64) * (1 << 32) + cols.ds.astype(np.int64)
    order = np.argsort(key, kind="stable")
    k, t0, t1 = key[order], cols.t0[order], end[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    lo = np.minimum.reduceat(t0, np.r_[0, cuts])
    hi = np.maximum.reduceat(t1, np.r_[0, cuts])
    keys = k[np.r_[0, cuts]]
    return {(int(x >> 32), int(x & 0xFFFFFFFF)): (float(a), float(b)) for x, a, b in zip(keys, lo, hi)}


def concurrent_datasets(spans: dict[tuple[int, int], tuple[float, float]]) -> dict[int, int]:
    """Per dataset: the most datasets one process held open together during its span (itself included),
    over the processes that accessed it."""
    by_rank: dict[int, list[tuple[int, float, float]]] = {}
    for (rank, ds), (a, b) in spans.items():
        by_rank.setdefault(rank, []).append((ds, a, b))
    out: dict[int, int] = {}
    for items in by_rank.values():
        for ds, a, b in items:
            # the most spans overlapping at one instant inside [a, b]: test at each span start inside it
            starts = [max(a, a2) for _, a2, b2 in items if a2 <= b and b2 >= a]
            most = max(sum(1 for _, a2, b2 in items if a2 <= t <= b2) for t in starts)
            out[ds] = max(out.get(ds, 1), most)
    return out


def cache_shares(cols, budget: int | None = CACHE_BUDGET) -> dict[int, int]:
    """Dataset id -> chunk-cache bytes it may hold: ``budget`` shared by the datasets open with it (None: no
    budget, every dataset absent from the result)."""
    if budget is None:
        return {}
    together = concurrent_datasets(open_spans(cols))
    return {ds: max(int(budget) // n, min(MIN_CACHE_SHARE, int(budget))) for ds, n in together.items()}


__all__ = ["CacheShare", "cache_shares", "concurrent_datasets", "open_spans"]
