"""Chunk grids aligned to where the program's reads start, not only to their size.

A chunk shape sized like the region a program reads still cuts every read when the region does not start on a
chunk boundary: a 40 x 60 box at (60, 100) read through 40 x 60 chunks touches 2 x 2 chunks, 4x the bytes asked
(realsize's r04, a dask climatology of a region: the recommended chunks matched the region's size, and apply's
compare measured 0.88x against a claimed 1.42x). The grid that never cuts a read along a dimension has a chunk
extent dividing every read's start and length there: their greatest common divisor (``grid_steps``).
``aligned_shape`` moves a candidate chunk shape onto that grid (the largest divisor of the step not above the
chunk's extent) along the dimensions the reads cover only part of, then regrows it along the other dimensions to
about the bytes it had. Random starts (mini-batches at any row) have a step of 1: nothing to align to.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from instrumentation.columns import SLAB, as_columns

MIN_STEP = 2
"""Steps below this say the reads start anywhere: no grid to align to."""


def _gcd_all(values: np.ndarray) -> int:
    values = np.unique(np.abs(values[values != 0]))
    return int(np.gcd.reduce(values)) if len(values) else 0


def grid_steps(accesses, shape: Sequence[int]) -> tuple[int, ...]:
    """Per dimension, the step of the grid every regular read starts and ends on: the gcd of the starts, lengths
    (stride and block of a strided selection) and run steps; 0 where the reads cover the whole extent or start
    anywhere (below ``MIN_STEP``), or where there is no regular read."""
    cols = as_columns(accesses)
    ndim = len(shape)
    if not cols.rows:
        return (0,) * ndim
    reads = cols.take(~cols.write) if cols.write.any() and not cols.write.all() else cols
    if reads.width < ndim:
        reads = reads.widen(ndim)
    slab = (reads.kind == SLAB) & (reads.ndim == ndim)
    if not slab.any():
        return (0,) * ndim
    reads = reads if slab.all() else reads.take(slab)
    start, count = reads.start[:, :ndim], reads.count[:, :ndim]
    stride, block, step = reads.stride[:, :ndim], reads.block[:, :ndim], reads.step[:, :ndim]
    out = []
    for d in range(ndim):
        extent = np.where(count[:, d] > 0, stride[:, d] * (count[:, d] - 1) + block[:, d], 0)
        if (extent >= shape[d]).all():
            out.append(0)  # every read spans the dimension: chunks cannot cut it there
            continue
        parts = [start[:, d], block[:, d], np.where(count[:, d] > 1, stride[:, d], 0),
                 np.where(reads.rep > 1, step[:, d], 0)]
        # a read ending at the array's edge ends on every grid
        ends = start[:, d] + extent
        parts.append(np.where(ends >= shape[d], 0, ends))
        g = _gcd_all(np.concatenate(parts))
        out.append(g if g >= MIN_STEP and g < shape[d] else 0)
    return tuple(out)


def covered(accesses, shape: Sequence[int]) -> tuple[bool, ...]:
    """Per dimension: do the reads together cover the whole extent (then a chunk that straddles two reads is read
    whole by them, not wasted)? From each dimension's union of [start, start + extent) (runs unrolled by their
    first and last start, the steps between filled by the run's extent when it does not leave gaps)."""
    cols = as_columns(accesses)
    ndim = len(shape)
    reads = cols.take(~cols.write) if cols.write.any() and not cols.write.all() else cols
    if reads.width < ndim:
        reads = reads.widen(ndim)
    out = []
    for d in range(ndim):
        n = int(shape[d])
        c = reads.count[:, d]
        extent = np.where(c > 0, reads.stride[:, d] * (c - 1) + reads.block[:, d], 0)
        last = reads.start[:, d] + reads.step[:, d] * (reads.rep - 1)
        lo = np.minimum(reads.start[:, d], last)
        # a run whose step is at most its extent covers [first start, last start + extent) without gaps
        dense = np.abs(reads.step[:, d]) <= extent
        hi = np.where(dense, np.maximum(reads.start[:, d], last) + extent, lo + extent)
        diff = np.zeros(n + 1, np.int64)
        np.add.at(diff, np.clip(lo, 0, n), 1)
        np.add.at(diff, np.clip(hi, 0, n), -1)
        out.append(bool((np.cumsum(diff)[:n] > 0).all()))
    return tuple(out)


def _largest_divisor_upto(g: int, limit: int) -> int:
    best = 1
    for k in range(1, int(math.isqrt(g)) + 1):
        if g % k == 0:
            for v in (k, g // k):
                if v <= limit and v > best:
                    best = v
    return best


def aligned_shape(chunks: Sequence[int], steps: Sequence[int], free: Sequence[bool], shape: Sequence[int],
                  itemsize: int) -> tuple[int, ...] | None:
    """``chunks`` on the reads' grid: along each dimension with a step (``grid_steps``) the reads do not together
    cover (``free`` False), a chunk extent that neither divides the step nor spans the array becomes the largest
    divisor of the step not above it; the bytes lost are grown back (whole factors) along the dimensions left
    free, up to the array. None when the shape is already on the grid."""
    c = [int(x) for x in chunks]
    moved = []
    for d, (g, x, n) in enumerate(zip(steps, c, shape)):
        if g and not free[d] and x < n and g % x:
            c[d] = _largest_divisor_upto(g, x)
            moved.append(d)
    if not moved:
        return None
    before = int(np.prod(chunks, dtype=np.int64))
    grow = [d for d in range(len(c)) if d not in moved and (free[d] or not steps[d]) and c[d] < shape[d]]
    for d in grow:
        have = int(np.prod(c, dtype=np.int64))
        if have * 1.5 >= before:
            break
        c[d] = min(int(shape[d]), c[d] * max(1, before // have))
    del itemsize  # the byte target is the original chunk's element count
    return tuple(c)


def aligned_shapes(shapes: dict, accesses, shape: Sequence[int], itemsize: int) -> dict:
    """For each candidate chunk shape (-> origin), its variant on the reads' grid (``aligned_shape``) when it
    differs: shape -> origin."""
    steps = grid_steps(accesses, shape)
    if not any(steps):
        return {}
    free = covered(accesses, shape)
    out = {}
    for ch, why in shapes.items():
        a = aligned_shape(ch, steps, free, shape, itemsize)
        if a is not None and a not in shapes:
            out.setdefault(a, f"{why}, on the reads' grid ({'x'.join(str(s or '-') for s in steps)})")
    return out


__all__ = ["aligned_shape", "aligned_shapes", "covered", "grid_steps"]
