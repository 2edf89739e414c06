"""Access map: where in an array a traced program read and wrote, and when (numbers only; the picture is drawn by
``advisor.render.accessmap``).

Two histograms of the bytes the program asked for, computed from the trace's
columns with numpy (no object per access):

- *space*: bytes per bin of a 2-D projection of the array. A bin is a group of
  whole chunks of the recorded layout (one chunk when the grid has at most
  ``MAX_BINS`` chunks along the axis), so its colour is the bytes requested
  from those chunks. N-d arrays are shown on the two axes along which the
  accesses move most (the most distinct start positions; ties: the later axis),
  summed over the others; a 1-D array on its one axis.
- *timeline*: bytes per (time bin, position bin) along the axis that moves most,
  reads and writes apart.

Each access counts with its bounding box, its bytes spread evenly over it (a
strided selection also colours its gaps). Boxes are added with difference arrays
(one scatter-add per corner, edge and side, then cumulative sums), so a map costs
a few passes over the columns whatever the boxes' sizes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from instrumentation.columns import AccessColumns
from instrumentation.records import DatasetRecord
from instrumentation.tracefile import Trace
from instrumentation.errors import InputError

MAX_BINS = 160
"""Bins along each axis of the space map (groups of whole chunks above that many chunks)."""
TIME_BINS = 320
"""Time bins of the timeline."""
POSITION_BINS = 120
"""Position bins along the timeline's axis."""
MOVES_SAMPLE = 50_000
"""Accesses sampled to tell along which axes the accesses move (distinct start positions)."""
MAX_ACCESSES = 4_000_000
"""Accesses unrolled for a map; above that every k-th is taken, its bytes counted k times."""


@dataclass(frozen=True, eq=False)
class AccessMap:
    """The histograms of one dataset's traced accesses (module docstring)."""

    name: str
    """``file::path`` of the array."""
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    """Array axes shown on the space map: (rows, columns), or one axis for a 1-D array."""
    projection: str
    """Which axes are shown and why, in words."""
    bin_size: tuple[int, ...]
    """Elements per space bin along each shown axis."""
    read_bytes: np.ndarray
    """(bins along axes[0], bins along axes[1]) bytes read per bin (1-D: one column)."""
    write_bytes: np.ndarray
    timeline_axis: int
    timeline_bin: int
    """Elements per position bin of the timeline."""
    time_edges: np.ndarray
    """Edges of the timeline's time bins: seconds since the first access, or access numbers (``time_unit``)."""
    time_unit: str
    """``s`` or ``access``."""
    timeline_read: np.ndarray
    """(TIME_BINS, position bins) bytes read."""
    timeline_write: np.ndarray
    chunks: tuple[int, ...] | None
    """Recorded chunk shape (None: contiguous)."""
    recommended: tuple[int, ...] | None = None
    """Chunk shape to draw as the recommended grid (None: none given, or contiguous)."""
    n_access: int = 0
    sampled: int = 1
    """Every ``sampled``-th access was counted (bytes scaled by it)."""

    @property
    def total_bytes(self) -> float:
        return float(self.read_bytes.sum() + self.write_bytes.sum())

    def with_recommended(self, chunks: tuple[int, ...] | None) -> "AccessMap":
        from dataclasses import replace

        return replace(self, recommended=None if chunks is None else tuple(int(c) for c in chunks))

    def describe(self) -> str:
        """One line: what the picture shows."""
        s = f"{self.n_access} accesses of {self.name}, shape {'x'.join(map(str, self.shape))}; {self.projection}"
        return s + (f"; every {self.sampled}th access counted" if self.sampled > 1 else "")


def pick(trace: Trace, name: str | None = None) -> DatasetRecord:
    """The dataset ``name`` (id, ``file::path``, path, or path without '/'); default: the one with the most
    bytes accessed among those with at least one dimension."""
    if name is not None:
        for d in trace.datasets.values():
            if name in (str(d.id), d.key, d.path, d.path.lstrip("/")):
                return d
        names = ", ".join(sorted(d.path for d in trace.datasets.values())) or "none"
        raise InputError(f"{trace.source or 'trace'}: no dataset {name!r} (recorded: {names})")
    cols = trace.columns
    moved = np.bincount(cols.ds, weights=cols.nbytes * cols.rep, minlength=max(trace.datasets, default=0) + 1)
    arrays = [d for d in trace.datasets.values() if len(d.shape) and moved[d.id] > 0]
    if not arrays:
        raise InputError(f"{trace.source or 'trace'}: no access to an array of one or more dimensions recorded")
    return max(arrays, key=lambda d: (moved[d.id], -d.id))


def _unrolled(cols: AccessColumns, ndim: int) -> tuple[np.ndarray, ...]:
    """Per access (runs unrolled, or every k-th of a long trace): lo (m, ndim), hi (m, ndim), time, bytes, write,
    and k."""
    cols = cols.take(cols.ndim == ndim) if (cols.ndim != ndim).any() else cols
    total = cols.n_access
    k = max(1, math.ceil(total / MAX_ACCESSES))
    if k > 1:
        cols = cols.every(k)
    rep = cols.rep
    if cols.rows and (rep != 1).any():
        row = np.repeat(np.arange(cols.rows), rep)
        nth = np.arange(len(row)) - np.repeat(np.cumsum(rep) - rep, rep)
        start = cols.start[row, :ndim] + nth[:, None] * cols.step[row, :ndim]
        t = cols.t0[row] + nth * cols.t_step[row]
    else:
        row = slice(None)
        start, t = cols.start[:, :ndim], cols.t0
    count, stride, block = (getattr(cols, a)[row, :ndim] for a in ("count", "stride", "block"))
    hi = np.where((count > 0) & (block > 0), start + stride * (count - 1) + block, start)
    nbytes = cols.nbytes[row].astype(float) * k
    keep = (hi > start).all(axis=1) & (nbytes > 0)
    return start[keep], hi[keep], t[keep], nbytes[keep], cols.write[row][keep], k


def box_histogram(a0, a1, b0, b1, weight, width_a: int, width_b: int, na: int, nb: int) -> np.ndarray:
    """(na, nb) sums of ``weight`` spread evenly over each box [a0, a1) x [b0, b1), binned ``width_a`` x
    ``width_b`` elements per bin (boxes clipped to the bins).

    The overlap of a box with bin i along one axis is ``width*[i0 <= i <= i1] - e0*[i = i0] - e1*[i = i1]``
    (e0, e1: the parts of its end bins it leaves out); the product of the two axes' overlaps expands into a
    rectangle, four sides and four corners, each added with a difference array."""
    a0, a1 = np.clip(a0, 0, na * width_a), np.clip(a1, 0, na * width_a)
    b0, b1 = np.clip(b0, 0, nb * width_b), np.clip(b1, 0, nb * width_b)
    ok = (a1 > a0) & (b1 > b0)
    a0, a1, b0, b1, weight = a0[ok], a1[ok], b0[ok], b1[ok], np.asarray(weight, float)[ok]
    out = np.zeros((na, nb))
    if not len(a0):
        return out
    i0, i1 = a0 // width_a, (a1 - 1) // width_a
    j0, j1 = b0 // width_b, (b1 - 1) // width_b
    one = (i0 == i1) & (j0 == j1)  # a box inside one bin (most accesses): all of its weight there
    if one.any():
        out += np.bincount(i0[one] * nb + j0[one], weights=weight[one], minlength=na * nb).reshape(na, nb)
        if one.all():
            return out
        a0, a1, b0, b1, weight = a0[~one], a1[~one], b0[~one], b1[~one], weight[~one]
        i0, i1, j0, j1 = i0[~one], i1[~one], j0[~one], j1[~one]
    ea0, ea1 = (a0 - i0 * width_a).astype(float), ((i1 + 1) * width_a - a1).astype(float)
    eb0, eb1 = (b0 - j0 * width_b).astype(float), ((j1 + 1) * width_b - b1).astype(float)
    d = weight / ((a1 - a0).astype(float) * (b1 - b0).astype(float))
    size = (na + 1) * (nb + 1)

    def add(i, j, v) -> np.ndarray:
        return np.bincount(i * (nb + 1) + j, weights=v, minlength=size).reshape(na + 1, nb + 1)

    rect = d * width_a * width_b
    grid = add(i0, j0, rect) - add(i0, j1 + 1, rect) - add(i1 + 1, j0, rect) + add(i1 + 1, j1 + 1, rect)
    out += grid.cumsum(0).cumsum(1)[:na, :nb]
    # sides along a (columns j0 and j1, rows i0..i1) and along b (rows i0 and i1, columns j0..j1)
    cols = np.zeros((na + 1, nb + 1))
    for j, e in ((j0, eb0), (j1, eb1)):
        v = d * width_a * e
        cols += add(i0, j, v) - add(i1 + 1, j, v)
    out -= cols.cumsum(0)[:na, :nb]
    rows = np.zeros((na + 1, nb + 1))
    for i, e in ((i0, ea0), (i1, ea1)):
        v = d * width_b * e
        rows += add(i, j0, v) - add(i, j1 + 1, v)
    out -= rows.cumsum(1)[:na, :nb]
    for i, ea in ((i0, ea0), (i1, ea1)):
        for j, eb in ((j0, eb0), (j1, eb1)):
            out += add(i, j, d * ea * eb)[:na, :nb]
    return np.maximum(out, 0.0)  # rounding leaves -1e-12 where nothing was accessed


def _choose_axes(lo: np.ndarray, shape: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    """The shown axes and the sentence saying which and why."""
    ndim = len(shape)
    if ndim == 1:
        return (0,), "the array's one axis"
    if ndim == 2:
        return (0, 1), "rows: axis 0, columns: axis 1"
    sample = lo[:: max(1, len(lo) // MOVES_SAMPLE)]
    moves = [len(np.unique(sample[:, d])) if len(sample) else 1 for d in range(ndim)]
    order = sorted(range(ndim), key=lambda d: (moves[d], d), reverse=True)
    axes = tuple(sorted(order[:2]))
    rest = [d for d in range(ndim) if d not in axes]
    why = ("the accesses move most along them" if max(moves) > 1 else "the accesses do not move: the last two")
    if max(moves) <= 1:
        axes, rest = (ndim - 2, ndim - 1), list(range(ndim - 2))
    return axes, (f"rows: axis {axes[0]}, columns: axis {axes[1]} of {ndim} ({why}); bytes summed over "
                  f"axis{'es' if len(rest) > 1 else ''} {', '.join(map(str, rest))}")


def _bin_width(extent: int, chunk: int | None, max_bins: int) -> int:
    """Elements per bin: whole chunks of the recorded grid when chunked, else an even split."""
    if chunk:
        return chunk * max(1, math.ceil(math.ceil(extent / chunk) / max_bins))
    return max(1, math.ceil(extent / max_bins))


def access_map(trace: Trace, dataset: DatasetRecord | str | None = None, *,
               recommended: tuple[int, ...] | None = None) -> AccessMap:
    """The access map of ``dataset`` (a record or a name for ``pick``; default: the most accessed array)."""
    ds = dataset if isinstance(dataset, DatasetRecord) else pick(trace, dataset)
    shape = tuple(int(s) for s in trace.extent(ds.id))
    ndim = len(shape)
    if not ndim or not math.prod(shape):
        raise InputError(f"{ds.key}: a scalar or empty array has no access map")
    cols = trace.columns_of(ds.id)
    lo, hi, t, nbytes, write, k = _unrolled(cols, ndim)
    axes, projection = _choose_axes(lo, shape)
    chunks = tuple(ds.chunks) if ds.chunks is not None and len(ds.chunks) == ndim else None
    width = tuple(_bin_width(shape[a], chunks[a] if chunks else None, MAX_BINS) for a in axes)
    nbins = tuple(math.ceil(shape[a] / w) for a, w in zip(axes, width))
    if ndim == 1:  # a second axis of one bin
        box = (lo[:, 0], hi[:, 0], np.zeros(len(lo), np.int64), np.ones(len(lo), np.int64))
        grid = (width[0], 1, nbins[0], 1)
    else:
        box = (lo[:, axes[0]], hi[:, axes[0]], lo[:, axes[1]], hi[:, axes[1]])
        grid = (*width, *nbins)
    maps = [box_histogram(*(b[m] for b in box), nbytes[m], *grid) for m in (~write, write)]
    # timeline: along the shown axis that moves most
    moves = [len(np.unique(lo[:: max(1, len(lo) // MOVES_SAMPLE), a])) for a in axes]
    along = axes[0] if len(axes) == 1 or moves[0] > moves[1] else axes[1]
    tl_width = _bin_width(shape[along], None, POSITION_BINS)
    tl_bins = math.ceil(shape[along] / tl_width)
    span = float(t.max() - t.min()) if len(t) else 0.0
    if span > 0:
        x, unit = t - t.min(), "s"
    else:
        x, unit = np.arange(len(t), dtype=float) * k, "access"
        span = float(max(len(t) * k, 1))
    edges = np.linspace(0.0, span, TIME_BINS + 1)
    tb = np.minimum((x / span * TIME_BINS).astype(np.int64), TIME_BINS - 1)
    tl = [box_histogram(tb[m], tb[m] + 1, lo[m, along], hi[m, along], nbytes[m], 1, tl_width, TIME_BINS, tl_bins)
          for m in (~write, write)]
    return AccessMap(
        name=ds.key, shape=shape, axes=axes, projection=projection, bin_size=width, read_bytes=maps[0],
        write_bytes=maps[1], timeline_axis=along, timeline_bin=tl_width, time_edges=edges, time_unit=unit,
        timeline_read=tl[0], timeline_write=tl[1], chunks=chunks,
        recommended=None if recommended is None else tuple(int(c) for c in recommended),
        n_access=int(cols.n_access), sampled=k)


__all__ = ["AccessMap", "MAX_ACCESSES", "MAX_BINS", "access_map", "box_histogram", "pick"]
