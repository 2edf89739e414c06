"""Robust at size (issue 30): the finalists replayed on the same pattern over an array GROWTH times larger.

A layout that wins only because the traced array fits in its chunk cache (or in
one chunk) loses that edge when the data grows, as real data does. The pattern is
grown along the axes it scans: the axes a single access covers most of (a time
series' time axis, a column read's rows), else the axes its accesses are spread
over (random mini-batches' rows; a covered axis counts only as the selection's long side, and not when every covered axis follows every axis
the starts spread over and the selection is thin along those: it reads whole records, and a table grows in
records, not in fields). On a grown axis a selection that spans the
whole extent spans the new one, and every other start moves with the axis (so
the accesses stay spread over it the same way); the other axes are unchanged.
The finalists are then counted on the grown trace by the same (calibrated) model.

Only a winner that relies on the traced array fitting in one chunk or in its chunk cache (``relies_on_fit``)
is checked, and only against finalists that do not (uncompressed, as grown arrays are priced); it gives way to
the one of the smallest worse regret over the two sizes (``ROBUST_LOSS``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from instrumentation.columns import SLAB, AccessColumns

GROWTH = 16
"""How much larger the array is made."""

ROBUST_LOSS = 1.25
"""A winner that is this much slower than another finalist on the grown array may give way to it: to the finalist
whose worse regret over the two sizes is the smallest (minimax regret), when that is smaller than the winner's.

A loss now and a loss at size weigh alike: a fixed window at the traced size instead (the finalists within 1.25x)
kept regret's w01 at full size (1M x 16, 300 random 512-row batches) on its whole 64 MB array as one compressed
chunk held by the whole 64 MiB cache budget, because the 262144x16 chunks were predicted 1.30x slower at the
traced size, though at 16x the size every batch would decode a 64 MB chunk."""

SPAN = 0.5
"""An axis is scanned when accesses cover (or spread over) at least this share of it."""


def growth_factors(cols: AccessColumns, shape: Sequence[int], growth: int = GROWTH) -> tuple[int, ...]:
    """Per axis the whole factor it grows by (their product about ``growth``)."""
    nd = len(shape)
    slabs = cols.take(cols.kind == SLAB) if (cols.kind != SLAB).any() else cols
    if not slabs.rows or nd == 0:
        return tuple(1 for _ in shape)
    w = slabs.widen(nd) if slabs.width < nd else slabs
    ext = ((w.count[:, :nd] - 1) * w.stride[:, :nd] + w.block[:, :nd])
    shp = np.maximum(np.asarray(shape, np.int64), 1)
    # covered: one access spans most of the axis, and that is its long side (a time series' time axis, not
    # the 32 columns of a row read)
    longest = np.median(ext.max(axis=1))
    share = np.median(ext / shp, axis=0)
    covered = (share >= SPAN) & (np.median(ext, axis=0) >= longest)
    lo = w.start[:, :nd].min(axis=0)
    hi = (w.start[:, :nd] + w.step[:, :nd] * (w.rep[:, None] - 1)).max(axis=0)
    spread = ((hi - lo) / shp >= SPAN) & (np.asarray(shape) > 1)  # the starts move over most of the axis
    along = [d for d in range(nd) if covered[d] and shape[d] > 1]
    over = [d for d in range(nd) if spread[d] and not covered[d]]
    # a selection covering only trailing axes, thin along the others, reads whole records (a table's row: regret's
    # w04 and w13; a mini-batch of rows): a C-order array gains records along its leading axes, the ones such
    # reads spread over, not fields
    records = bool(along) and bool(over) and min(along) > max(over) and all(share[d] < SPAN for d in over)
    axes = over if records else (along or over)
    if not axes:
        axes = [int(np.argmax(shape))]
    f = [1] * nd
    k, i = growth, 0
    while k > 1:  # doubling round robin: 16 over one axis, 4x4 over two, 4x2x2 over three
        f[axes[i % len(axes)]] *= 2
        k //= 2
        i += 1
    return tuple(f)


def grown(cols: AccessColumns, shape: Sequence[int], factors: Sequence[int]) -> tuple[AccessColumns, tuple[int, ...]]:
    """The accesses over an array ``factors`` times larger per axis (module docstring); irregular rows unchanged."""
    nd = len(shape)
    new_shape = tuple(int(s) * int(g) for s, g in zip(shape, factors))
    w = cols.widen(nd) if cols.width < nd else cols
    start, count, block, step = w.start.copy(), w.count.copy(), w.block.copy(), w.step.copy()
    slab = (w.kind == SLAB) & (w.ndim == nd)
    for d, g in enumerate(factors):
        if g == 1:
            continue
        ext = (count[:, d] - 1) * w.stride[:, d] + block[:, d]
        full = slab & (start[:, d] == 0) & (ext >= shape[d])
        part = slab & ~full
        start[part, d] *= g
        step[part, d] *= g
        one = full & (count[:, d] == 1)
        block[one, d] *= g
        many = full & (count[:, d] > 1)
        count[many, d] *= g
    n = np.where(slab, np.prod(count[:, :nd] * block[:, :nd], axis=1), w.n)
    itemsize = np.where(w.n > 0, w.nbytes // np.maximum(w.n, 1), 0)
    out = w._with(start=start, count=count, block=block, step=step, n=n.astype(np.int64),
                  nbytes=(n * itemsize).astype(np.int64))
    return out, new_shape


@dataclass(frozen=True)
class AtSize:
    """The finalists' predicted seconds on the grown array, and the layout that gave way (if one did)."""

    factors: tuple[int, ...]
    shape: tuple[int, ...]
    seconds: dict
    """Candidate -> predicted seconds on the grown array."""
    replaced: object = None
    """The winner's Candidate when it gave way, else None."""
    chosen: object = None
    line: str = ""

    def get_config(self) -> dict:
        return {"factors": list(self.factors), "shape": list(self.shape), "line": self.line,
                "seconds": {c.label: s for c, s in self.seconds.items()}}


def relies_on_fit(candidate, shape: Sequence[int], itemsize: int) -> bool:
    """The layout holds at least SPAN of the traced array in one chunk, or in its HDF5 chunk cache: what a
    larger array takes away (issue 30: "because it relied on the array fitting in a cache"). HDF5 contiguous
    storage does not: it reads what is selected, through its sieve buffer, at any size."""
    if candidate.chunks is None:
        return False
    array = float(np.prod(shape, dtype=np.float64)) * itemsize
    chunk = float(np.prod(candidate.chunks, dtype=np.float64)) * itemsize
    cache = (candidate.cache_bytes or 0) if candidate.library == "hdf5" else 0
    return array > 0 and (chunk >= SPAN * array or cache >= SPAN * array)


def at_size(model, winner, finalists: Sequence, growth: int = GROWTH) -> AtSize:
    """Replay ``finalists`` (Recommendations, the winner among them) on the grown array through ``model``'s
    profile and calibration, when the winner relies on the array fitting in one chunk or its cache
    (``relies_on_fit``); it gives way when it is ROBUST_LOSS slower there than the finalist of the smallest worse
    regret over the traced and the grown size, and that regret is below the winner's."""
    from advisor.search import CostModel

    work = model.work
    factors = growth_factors(work.columns, work.shape, growth)
    item = np.dtype(model.ds.dtype).itemsize
    if not relies_on_fit(winner.candidate, work.shape, item):  # nothing a larger array takes away
        return AtSize(factors, tuple(work.shape), {}, None, winner, "")
    cols, shape = grown(work.columns, work.shape, factors)
    big = CostModel(model.ds, cols, shape, model.profile, procs=model.procs, warm=model.warm,
                    calibration=model.calibration, jobs=model.jobs)
    # the layouts it may give way to do not rely on the fit themselves: on an array small enough that every
    # finalist's cache holds half of it, the winner stays (regret's w01 at a quarter of its size, 16 MB: its
    # whole array as one chunk measured fastest, 65536x16 chunks with a 16 MiB cache 1.57x slower)
    pool = [r for r in finalists
            if r is winner or (r.candidate.compressor is None and not relies_on_fit(r.candidate, work.shape, item))]
    pool = [winner] + [r for r in pool if r.candidate != winner.candidate]
    if len(pool) == 1:
        return AtSize(factors, tuple(work.shape), {}, None, winner, "")
    big.prefetch([big.layout(r.candidate) for r in pool])
    seconds = {r.candidate: big.evaluate(r.candidate.with_codec(None, None)).seconds for r in pool}
    now, then = min(r.seconds for r in pool), min(seconds.values())

    def regret(r) -> float:  # the worse of its regrets at the traced and at the grown size
        return max(r.seconds / now, seconds[r.candidate] / then) if now > 0 and then > 0 else 1.0

    best = min(pool, key=regret)  # the winner first: a tie keeps it
    ws, bs = seconds[winner.candidate], seconds[best.candidate]
    if best.candidate != winner.candidate and ws > ROBUST_LOSS * bs and regret(best) < regret(winner):
        one = relies_on_fit(replace(winner.candidate, cache_bytes=None), work.shape, item)
        why = "relies on the array fitting in " + ("one chunk" if one else "its chunk cache")
        line = (f"robust at size: {winner.label} {why}: on the same pattern over a {growth}x larger array it is "
                f"predicted {ws / bs:.2f}x slower than {best.label} ({ws:.3g} s against {bs:.3g} s), "
                f"which is recommended instead ({best.seconds / winner.seconds:.2f}x the winner's time at the "
                "traced size)")
        return AtSize(factors, shape, seconds, winner.candidate, best, line)
    return AtSize(factors, shape, seconds, None, winner, "")


__all__ = ["AtSize", "GROWTH", "ROBUST_LOSS", "at_size", "growth_factors", "grown", "relies_on_fit"]
