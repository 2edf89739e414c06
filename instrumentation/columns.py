"""Accesses as a struct of arrays: what a trace holds in memory, from disk to the models.

One row is one access, or a *run* of ``rep`` accesses that differ only by a
constant offset ``step`` of their start (strided scans, per-rank tiles,
appends: Recorder's compact patterns). Access k of a run (0 <= k < rep) starts
at ``start + k * step`` at time ``t0 + k * t_step``; ``dt`` is the run's total
duration. Selections that are not regular hyperslabs (index lists, points) are
rare next to slabs; their rows keep the ``Selection`` in ``irregular``.

Every per-access consumer (chunk walk, cache simulation, classification)
reads these arrays; ``records()`` makes AccessRecords only for the code paths
that replay accesses one by one for real (``verify``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from .records import READ, WRITE, AccessRecord, Selection

SLAB, ORTHOGONAL, POINTS = 0, 1, 2
"""``kind`` codes."""
KINDS = ("hyperslab", "orthogonal", "points")

_INT_COLUMNS = ("ds", "rank", "n", "nbytes", "rep")


class HyperslabColumns(NamedTuple):
    """Regular hyperslabs, one per row (``AccessColumns.slabs``): each (m, K) int64."""

    start: np.ndarray
    count: np.ndarray
    stride: np.ndarray
    block: np.ndarray


@dataclass(frozen=True, eq=False)
class AccessColumns:
    """Accesses of a trace, one row per access or run (module docstring).

    ``start``/``count``/``stride``/``block``/``step`` are (rows, K) int64, K the
    largest ``ndim`` among the rows; a row's dimensions beyond its ``ndim`` hold
    0/1/1/1/0. For an irregular row they hold its bounding box (as
    ``Selection`` does) and ``irregular[row]`` the selection itself.
    """

    ds: np.ndarray
    write: np.ndarray
    rank: np.ndarray
    t0: np.ndarray
    dt: np.ndarray
    t_step: np.ndarray
    n: np.ndarray
    nbytes: np.ndarray
    rep: np.ndarray
    kind: np.ndarray
    ndim: np.ndarray
    start: np.ndarray
    count: np.ndarray
    stride: np.ndarray
    block: np.ndarray
    step: np.ndarray
    irregular: dict = field(default_factory=dict)
    collective: np.ndarray | None = None
    """MPI-IO collective transfer per row (h5py ``with ds.collective:``); None: none is."""
    proc: np.ndarray | None = None
    """The process of the rank that made each row's accesses: its index in the rank's header's ``processes`` (0:
    the process that wrote the trace; 1..: the followed processes merged into it, by pid). Each process holds its
    own chunk caches (iomodel's replay, advisor.budget). None: all 0."""
    epoch: np.ndarray | None = None
    """The open span of its dataset, in its process, each row's accesses were made under: the closes of the dataset
    or its file by that process before them (``instrumentation.opens.mark_epochs``, from the trace's ``o`` records;
    not stored in batches). The model empties the process's chunk cache where it changes. None: all 0."""

    def __post_init__(self):
        if self.collective is None:
            object.__setattr__(self, "collective", np.zeros(len(self.ds), bool))
        if self.proc is None:
            object.__setattr__(self, "proc", np.zeros(len(self.ds), np.int32))
        if self.epoch is None:
            object.__setattr__(self, "epoch", np.zeros(len(self.ds), np.int32))

    # ------------------------------------------------------------------ sizes
    @property
    def rows(self) -> int:
        return len(self.ds)

    @property
    def n_access(self) -> int:
        return int(self.rep.sum())

    def __len__(self) -> int:
        return self.n_access

    @cached_property
    def access_ends(self) -> np.ndarray:
        """Access number after each row (``rep`` summed up), computed once: the in-trace calibration cuts a long
        trace into windows by access number dozens of times."""
        return np.cumsum(self.rep)

    @property
    def width(self) -> int:
        return self.start.shape[1]

    # ------------------------------------------------------------------ building
    @classmethod
    def empty(cls, width: int = 0) -> "AccessColumns":
        z = np.zeros(0, np.int64)
        zk = np.zeros((0, width), np.int64)
        return cls(z.astype(np.int32), z.astype(bool), z.astype(np.int32), z.astype(float), z.astype(float),
                   z.astype(float), z, z, z, z.astype(np.int8), z.astype(np.int8), zk, zk, zk, zk, zk)

    @classmethod
    def slabs(cls, ds, write, hyperslabs: "HyperslabColumns | tuple", n, nbytes, t0, dt, rank: int,
              ndim) -> "AccessColumns":
        """One regular hyperslab per row, from its columns (``hyperslabs``: start, count, stride, block, each
        (m, K); a row's dimensions beyond its ``ndim`` hold 0/1/1/1)."""
        start, count, stride, block = hyperslabs
        m, width = start.shape
        return cls(
            ds=np.asarray(ds, np.int32), write=np.asarray(write, bool), rank=np.full(m, rank, np.int32),
            t0=np.asarray(t0, float), dt=np.asarray(dt, float), t_step=np.zeros(m),
            n=np.asarray(n, np.int64), nbytes=np.asarray(nbytes, np.int64), rep=np.ones(m, np.int64),
            kind=np.full(m, SLAB, np.int8), ndim=np.asarray(ndim, np.int8), start=start, count=count,
            stride=stride, block=block, step=np.zeros((m, width), np.int64))

    @classmethod
    def from_records(cls, records: Sequence[AccessRecord]) -> "AccessColumns":
        """One row per record (legacy JSON Lines traces, hand-built lists)."""
        m = len(records)
        if not m:
            return cls.empty()
        width = max(r.selection.ndim if r.selection.points is None else r.selection.points.shape[1]
                    for r in records)
        start = np.zeros((m, width), np.int64)
        count = np.ones((m, width), np.int64)
        stride = np.ones((m, width), np.int64)
        block = np.ones((m, width), np.int64)
        kind = np.zeros(m, np.int8)
        ndim = np.zeros(m, np.int8)
        irregular = {}
        for i, r in enumerate(records):
            s = r.selection
            k = s.kind
            if k == "points":
                kind[i] = POINTS
                ndim[i] = s.points.shape[1]
                irregular[i] = s
                lo, hi = s.bounds()
                start[i, : ndim[i]] = lo
                block[i, : ndim[i]] = np.subtract(hi, lo)
                continue
            nd = ndim[i] = s.ndim
            start[i, :nd], count[i, :nd], stride[i, :nd], block[i, :nd] = s.start, s.count, s.stride, s.block
            if k == "orthogonal":
                kind[i] = ORTHOGONAL
                irregular[i] = s
        return cls(
            ds=np.fromiter((r.dataset for r in records), np.int32, m),
            write=np.fromiter((r.op == WRITE for r in records), bool, m),
            rank=np.fromiter((r.rank for r in records), np.int32, m),
            t0=np.fromiter((r.t_start for r in records), float, m),
            dt=np.fromiter((r.duration for r in records), float, m),
            t_step=np.zeros(m),
            n=np.fromiter((r.nelements for r in records), np.int64, m),
            nbytes=np.fromiter((r.nbytes for r in records), np.int64, m),
            rep=np.ones(m, np.int64), kind=kind, ndim=ndim,
            start=start, count=count, stride=stride, block=block, step=np.zeros((m, width), np.int64),
            irregular=irregular, collective=np.fromiter((r.collective for r in records), bool, m),
            proc=np.fromiter((r.process for r in records), np.int32, m),
        )

    @classmethod
    def concat(cls, parts: Iterable["AccessColumns"]) -> "AccessColumns":
        parts = [p for p in parts if p.rows]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        width = max(p.width for p in parts)
        parts = [p.widen(width) for p in parts]
        irregular, base = {}, 0
        for p in parts:
            irregular.update({base + i: s for i, s in p.irregular.items()})
            base += p.rows
        cat = {name: np.concatenate([getattr(p, name) for p in parts]) for name in _ALL}
        return cls(**cat, irregular=irregular)

    def widen(self, width: int) -> "AccessColumns":
        """The same rows with dimension columns padded to ``width``."""
        if width == self.width:
            return self
        m, pad = self.rows, width - self.width
        out = {}
        for name, fill in (("start", 0), ("count", 1), ("stride", 1), ("block", 1), ("step", 0)):
            out[name] = np.concatenate([getattr(self, name), np.full((m, pad), fill, np.int64)], axis=1)
        return self._with(**out)

    def with_epochs(self, epoch: np.ndarray) -> "AccessColumns":
        """The same rows with ``epoch`` set (one value per row)."""
        return self._with(epoch=np.asarray(epoch, np.int32))

    def unrolled(self, rows: np.ndarray) -> "AccessColumns":
        """The same accesses with the runs of the rows ``rows`` (a boolean mask) one row per access."""
        if not rows.any():
            return self
        reps = np.where(rows, self.rep, 1)
        idx = np.repeat(np.arange(self.rows), reps)
        k = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
        out = self.take(idx)
        m = rows[idx]
        k = np.where(m, k, 0)
        return out._with(
            start=out.start + k[:, None] * out.step, t0=out.t0 + k * out.t_step,
            dt=np.where(m, out.dt / out.rep, out.dt), t_step=np.where(m, 0.0, out.t_step),
            rep=np.where(m, 1, out.rep), step=np.where(m[:, None], 0, out.step))

    def _with(self, **changes) -> "AccessColumns":
        kw = {name: getattr(self, name) for name in _ALL}
        kw["irregular"] = self.irregular
        kw.update(changes)
        return AccessColumns(**kw)

    # ------------------------------------------------------------------ selecting
    def take(self, rows: np.ndarray) -> "AccessColumns":
        """These rows (a boolean mask or indices), in that order."""
        rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows, np.int64)
        irregular = {}
        if self.irregular:
            inv = {int(r): i for i, r in enumerate(rows.tolist()) if int(r) in self.irregular}
            irregular = {i: self.irregular[r] for r, i in inv.items()}
        kw = {name: getattr(self, name)[rows] for name in _ALL}
        return AccessColumns(**kw, irregular=irregular)

    def rows_between(self, a: int, b: int) -> "AccessColumns":
        """Rows a..b-1 as views (no copy)."""
        if a == 0 and b >= self.rows:
            return self
        return self._with(**{name: getattr(self, name)[a:b] for name in _ALL},
                          irregular={i - a: s for i, s in self.irregular.items() if a <= i < b})

    def of_dataset(self, ds: int) -> "AccessColumns":
        return self.take(self.ds == ds)

    def expanded(self) -> "AccessColumns":
        """One row per access (runs unrolled)."""
        if not self.rows or (self.rep == 1).all():
            return self
        idx = np.repeat(np.arange(self.rows), self.rep)
        k = np.arange(len(idx)) - np.repeat(np.cumsum(self.rep) - self.rep, self.rep)
        out = self.take(idx)
        return out._with(
            start=out.start + k[:, None] * out.step, t0=out.t0 + k * out.t_step,
            dt=out.dt / out.rep, t_step=np.zeros(len(idx)), rep=np.ones(len(idx), np.int64),
            step=np.zeros_like(out.step),
        )

    def every(self, k: int) -> "AccessColumns":
        """Every k-th access, in order (the first kept), as one row each, without unrolling the runs."""
        if k <= 1:
            return self
        ends = self.access_ends
        pos = np.arange(0, int(ends[-1]) if self.rows else 0, k)
        row = np.searchsorted(ends, pos, side="right")
        off = pos - (ends - self.rep)[row]
        out = self.take(row)
        return out._with(
            start=out.start + off[:, None] * out.step, t0=out.t0 + off * out.t_step, dt=out.dt / out.rep,
            t_step=np.zeros(len(row)), rep=np.ones(len(row), np.int64), step=np.zeros_like(out.step),
        )

    def window(self, lo: int, hi: int) -> "AccessColumns":
        """Accesses lo..hi-1 (by access number, runs cut where the window cuts them)."""
        return self._window(lo, hi, self.access_ends)

    def windows(self, size: int):
        """Consecutive windows of ``size`` accesses (the last may be shorter), in order: bounded pieces of a
        long trace whose runs stay folded."""
        ends = self.access_ends
        total = int(ends[-1]) if self.rows else 0
        for lo in range(0, total, size):
            yield self._window(lo, lo + size, ends)

    def _window(self, lo: int, hi: int, ends: np.ndarray) -> "AccessColumns":
        hi = min(hi, int(ends[-1]) if self.rows else 0)
        if lo >= hi:
            return self.take(np.zeros(0, np.int64))
        r0 = int(np.searchsorted(ends, lo, side="right"))
        r1 = int(np.searchsorted(ends, hi - 1, side="right"))
        skip = lo - int(ends[r0] - self.rep[r0])  # accesses of the first row before the window
        keep = hi - int(ends[r1] - self.rep[r1])  # accesses kept of the last row, counted from its start
        if r0 == 0 and r1 == self.rows - 1 and skip == 0 and keep == self.rep[r1]:
            return self
        out = self.rows_between(r0, r1 + 1)  # views: no copy of a long trace's columns per window; only the cut rows change
        if skip == 0 and keep == out.rep[-1]:  # cut between rows: nothing changes (the calibration's prefixes)
            return out
        rep = out.rep.copy()
        rep[-1] = keep
        rep[0] -= skip
        changes = dict(rep=rep, dt=out.dt.copy())
        for i in {0, out.rows - 1}:
            changes["dt"][i] = out.dt[i] * rep[i] / out.rep[i]
        if skip:
            changes["start"], changes["t0"] = out.start.copy(), out.t0.copy()
            changes["start"][0] += skip * out.step[0]
            changes["t0"][0] += skip * out.t_step[0]
        return out._with(**changes)

    # ------------------------------------------------------------------ per-access quantities
    def op_codes(self) -> np.ndarray:
        """1 for a write, 0 for a read, per access (runs unrolled)."""
        return np.repeat(self.write.astype(np.int64), self.rep)

    def total_bytes(self, mask: np.ndarray | None = None) -> int:
        m = slice(None) if mask is None else mask
        return int((self.nbytes[m] * self.rep[m]).sum())

    def ranks(self) -> np.ndarray:
        return np.unique(self.rank)

    def upper_corner(self, ndim: int) -> np.ndarray | None:
        """Per-dimension exclusive upper bound of everything selected by rows of this ``ndim`` (None: none)."""
        m = self.ndim == ndim
        if not m.any():
            return None
        every = bool(m.all())
        top = np.full(ndim, np.iinfo(np.int64).min)  # some row of this ndim raises every entry
        # CORNER_ROWS rows at a time: a dozen whole-trace temporaries per dimension were each fresh memory to
        # fault in (10M rows: 1.7 s, against 0.2)
        for lo in range(0, self.rows, CORNER_ROWS):
            hi = min(lo + CORNER_ROWS, self.rows)
            mine = slice(None) if every else m[lo:hi]
            last_rep = self.rep[lo:hi] - 1
            pts = self.kind[lo:hi] == POINTS  # stored as their bounding box: start, block = extent
            for d in range(ndim):
                start, count, stride, block, step = (getattr(self, k)[lo:hi, d] for k in _DIMS)
                last = start + np.maximum(step, 0) * last_rep
                end = np.where((count > 0) & (block > 0), last + stride * (count - 1) + block, last)
                end = np.where(pts, start + block, end)[mine]
                if len(end):
                    top[d] = max(top[d], end.max())
        return top

    def selections(self) -> list[Selection]:
        """One Selection per access (runs unrolled)."""
        e = self.expanded()
        out = []
        for i in range(e.rows):
            s = e.irregular.get(i)
            if s is None:
                nd = int(e.ndim[i])
                s = Selection(tuple(e.start[i, :nd].tolist()), tuple(e.count[i, :nd].tolist()),
                              tuple(e.stride[i, :nd].tolist()), tuple(e.block[i, :nd].tolist()))
            out.append(s)
        return out

    def records(self) -> list[AccessRecord]:
        """One AccessRecord per access (runs unrolled): for code that replays accesses one by one."""
        e = self.expanded()
        sels = e.selections()
        ops = (READ, WRITE)
        return [AccessRecord(int(d), ops[w], s, int(n), int(b), float(t), float(dt), int(r), collective=bool(c),
                             process=int(p))
                for d, w, s, n, b, t, dt, r, c, p in zip(e.ds.tolist(), e.write.tolist(), sels, e.n.tolist(),
                                                          e.nbytes.tolist(), e.t0.tolist(), e.dt.tolist(),
                                                          e.rank.tolist(), e.collective.tolist(), e.proc.tolist())]


_DIMS = ("start", "count", "stride", "block", "step")
CORNER_ROWS = 1 << 15
"""Rows ``upper_corner`` takes at a time (its temporaries stay in the caches)."""
ARRAYS = ("ds", "write", "rank", "t0", "dt", "t_step", "n", "nbytes", "rep", "kind", "ndim",
           "start", "count", "stride", "block", "step", "collective", "proc")
_ALL = (*ARRAYS, "epoch")
"""``ARRAYS`` and the columns derived at load (not stored: ``epoch``)."""


def as_columns(accesses) -> AccessColumns:
    """AccessColumns from AccessColumns or a sequence of AccessRecords."""
    if isinstance(accesses, AccessColumns):
        return accesses
    return AccessColumns.from_records(list(accesses))


def compact_runs(cols: AccessColumns, min_rep: int = 3) -> AccessColumns:
    """Fold consecutive regular accesses that differ by a constant start offset into runs.

    Consecutive rows (each one access) join when dataset, op, rank, count,
    stride, block, n and bytes agree, both are hyperslabs, and the offset
    between their starts equals the run's step. Runs shorter than ``min_rep``
    stay single rows. Greedy from the left, vectorized.
    """
    m = cols.rows
    if m < min_rep or not (cols.rep == 1).all():
        return cols
    same = np.ones(m - 1, bool)
    for name in ("ds", "write", "rank", "proc", "epoch", "n", "nbytes", "ndim", "collective"):
        a = getattr(cols, name)
        same &= a[1:] == a[:-1]
    same &= (cols.kind[1:] == SLAB) & (cols.kind[:-1] == SLAB)
    for name in ("count", "stride", "block"):
        a = getattr(cols, name)
        same &= (a[1:] == a[:-1]).all(axis=1)
    delta = cols.start[1:] - cols.start[:-1]
    # pair segments: maximal groups of consecutive valid pairs with equal delta
    brk = np.ones(m - 1, bool)
    brk[1:] = ~same[1:] | ~same[:-1] | (delta[1:] != delta[:-1]).any(axis=1)
    seg_start = np.flatnonzero(brk & same)
    if not len(seg_start):
        return cols
    nxt = np.append(np.flatnonzero(brk), m - 1)
    seg_end = nxt[np.searchsorted(nxt, seg_start, side="right")]  # one past the segment's last pair
    # a segment whose first access ended the previous run drops its first pair
    long = (seg_end - seg_start) >= min_rep - 1
    seg_start, seg_end = seg_start[long], seg_end[long]
    if not len(seg_start):
        return cols
    clash = np.zeros(len(seg_start), bool)
    clash[1:] = seg_start[1:] == seg_end[:-1]
    seg_start = seg_start + clash
    keep = (seg_end - seg_start) >= min_rep - 1
    first, last = seg_start[keep], seg_end[keep]  # accesses first..last (inclusive) form a run
    if not len(first):
        return cols
    rep = last - first + 1
    member = np.zeros(m + 1, np.int64)
    np.add.at(member, first + 1, 1)
    np.add.at(member, last + 1, -1)
    inner = np.cumsum(member)[:m] > 0  # accesses inside a run other than its first
    t_step = (cols.t0[last] - cols.t0[first]) / (rep - 1)
    csum = np.concatenate([[0.0], np.cumsum(cols.dt)])
    dt = cols.dt.copy()
    dt[first] = csum[last + 1] - csum[first]
    reps = cols.rep.copy()
    reps[first] = rep
    steps = cols.step.copy()
    steps[first] = delta[first]
    ts = cols.t_step.copy()
    ts[first] = t_step
    out = cols._with(dt=dt, rep=reps, step=steps, t_step=ts)
    return out.take(~inner)


def fold_runs(cols: AccessColumns) -> AccessColumns:
    """The columnar form of a trace's accesses: each rank's regular runs folded (``compact_runs``), ranks one
    after another, and within a rank its processes one after another (a merged run's trace holds them so). A JSON
    Lines trace is held in this form too, so that nothing read from the accesses (the in-trace calibration reads a
    run's mean duration) depends on the file the trace came from."""
    if not cols.rows:
        return cols
    key = cols.rank if not cols.proc.any() else (cols.rank.astype(np.int64) << 32) + cols.proc
    if (key[1:] < key[:-1]).any():
        cols = cols.take(np.argsort(key, kind="stable"))
    return compact_runs(cols.expanded())


__all__ = ["ARRAYS", "AccessColumns", "HyperslabColumns", "KINDS", "ORTHOGONAL", "POINTS", "SLAB", "as_columns",
           "compact_runs", "fold_runs"]
