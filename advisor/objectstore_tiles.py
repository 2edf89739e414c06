"""Accesses that follow the array's chunk grid (issue #35): a program that takes its blocks from the layout.

``dask.array.from_zarr`` (and ``from_array(z, chunks=z.chunks)`` or a multiple of them), xarray's
``open_zarr(chunks={})`` and loops over ``z.blocks`` read the array in blocks of ``m`` chunks along each dimension,
aligned to the grid: in another layout the same program reads blocks of ``m`` of *that* layout's chunks (zarr's
``Array.chunks``: the inner chunk of a sharded array). Pricing a candidate with the traced boxes instead would make
each 250x250 block of the current layout read a whole 1000x1000 chunk of the candidate, 16 times the bytes
(``benchmarks/validation/objectstore.py workloads``, the dask reduction).

The traced accesses follow the grid when each is a box starting on a chunk boundary, ``m`` chunks long along each
dimension (shorter only where it reaches the region's end), with the same ``m`` for all, at least two boxes, and
as many as the region holds.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ChunkFollowing:
    """Blocks of ``multiple`` chunks along each dimension over the region ``[lo, hi)``; reads or writes."""

    multiple: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    write: bool
    rest: tuple = field(default=(), compare=False)
    """The other traced accesses, (index arrays, write, weight) each: probes such as dask's one-element read of
    ``x[:1, :1]``, priced as traced in every layout."""

    def tiles(self, unit: tuple[int, ...], shape: tuple[int, ...], limit: int = 20000):
        """The program's blocks in a layout whose chunk is ``unit``: (boxes, writes, weights) as ``_boxes`` gives
        them (at most ``limit`` boxes, each weighing for the blocks it stands for)."""
        starts = []
        for m, u, lo, hi, n in zip(self.multiple, unit, self.lo, self.hi, shape):
            step = m * u
            starts.append([(max(a, lo), min(a + step, hi, n)) for a in range((lo // step) * step, hi, step)])
        total = math.prod(len(s) for s in starts)
        stride = max(1, math.ceil(total / limit))
        boxes, weights = [], []
        for i, combo in enumerate(itertools.product(*starts)):
            if i % stride:
                continue
            boxes.append([np.arange(a, b) for a, b in combo])
            weights.append(min(stride, total - i))
        writes = [self.write] * len(boxes)
        for dims, w, wt in self.rest:
            boxes.append(dims)
            writes.append(w)
            weights.append(wt)
        return boxes, np.asarray(writes, bool), np.asarray(weights, np.float64)


def follows_chunks(boxes, writes, weights, chunks, shape, probes: float = 0.1) -> ChunkFollowing | None:
    """The grid-following pattern of the traced ``boxes`` (``_boxes``: with their writes and weights) in a layout of
    ``chunks``, else None. The blocks must also cover their region (a pass over it, as a reduction or a copy makes):
    a few chunk-aligned reads here and there say nothing about how the program chose them. Up to ``probes`` of the
    accesses (by weight), or two, may be something else (dask reads ``x[:1, :1]`` to learn the dtype)."""
    if chunks is None or len(boxes) < 2:
        return None
    aligned, rest = [], []
    for i, dims in enumerate(boxes):
        ok = True
        for idx, c, s in zip(dims, chunks, shape):
            a, n = int(idx[0]), len(idx)
            ok = ok and not a % c and int(idx[-1]) - a + 1 == n and (not n % c or a + n == s)
        (aligned if ok else rest).append(i)
    weights = np.asarray(weights, np.float64)
    if (len(aligned) < 2 or weights[rest].sum() > max(2.0, probes * weights.sum())
            or len({bool(writes[i]) for i in aligned}) > 1):
        return None
    lo = [min(int(boxes[i][d][0]) for i in aligned) for d in range(len(shape))]
    hi = [max(int(boxes[i][d][0]) + len(boxes[i][d]) for i in aligned) for d in range(len(shape))]
    # edge blocks are shorter: the largest multiple along a dimension is the program's
    multiple = tuple(max(math.ceil(len(boxes[i][d]) / c) for i in aligned) for d, c in enumerate(chunks))
    for i in aligned:  # every block but those at the region's end has the full multiple
        for d, (idx, c, m) in enumerate(zip(boxes[i], chunks, multiple)):
            if len(idx) != m * c and int(idx[0]) + len(idx) != hi[d]:
                return None
    blocks = math.prod(math.ceil((b - a) / (m * c)) for a, b, m, c in zip(lo, hi, multiple, chunks))
    if weights[aligned].sum() < blocks:
        return None
    return ChunkFollowing(multiple, tuple(lo), tuple(hi), bool(writes[aligned[0]]),
                          tuple((boxes[i], bool(writes[i]), float(weights[i])) for i in rest))


__all__ = ["ChunkFollowing", "follows_chunks"]
