"""The reads a program makes in a recommended layout once the printed recipe is applied (issue 30, item 6).

An xarray program that reads through dask (``open_dataset(..., chunks=...)``) makes one read per dask block, and
the recipe (``advisor.idiom.xarray_code``) gives it new dask chunks, ones that hold whole storage chunks of the
layout (``advisor.idiom.dask_chunks``). Laid from the array's origin, as xarray lays them, they cut the region the
program reads into other blocks than the traced ones: r04's mean over time of a 40 x 60 region, read in 16 blocks
of 365 steps, becomes 4 blocks of 5840 steps in 5840 x 20 x 20 chunks (benchmarks/validation/realsize.py). Replaying
the traced blocks there measures another program than the one the recipe makes.

``recipe_reads`` gives those reads for one layout: the traced blocks (the ``program_blocking`` grid) replaced by
the recipe's dask blocks over the region they covered, every other access (dask's one-element probes, reads off
the grid) kept as traced. ``advisor.verify`` replays them for each recommended layout, and the model prices the
recommendation on them (``advisor.api``).
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Sequence

from instrumentation.records import READ, AccessRecord, Selection


def _on_grid(sel: Selection, block: Sequence[int], origin: Sequence[int], shape: Sequence[int]) -> bool:
    """``sel`` is one block of the program's grid (edge blocks may be shorter)."""
    if sel.kind != "hyperslab" or any(c != 1 for c in sel.count):
        return False
    for a, n, b, o, s in zip(sel.start, sel.block, block, origin, shape):
        if (a - o) % b or not (n == b or a + n == s):
            return False
    return True


def dask_blocks(lo: Sequence[int], hi: Sequence[int], grid: Sequence[int]) -> list[Selection]:
    """The boxes of a grid of ``grid``-sized blocks from the origin that cover ``[lo, hi)``, in C order (dask's
    order of the blocks' keys)."""
    edges = []
    for a, b, g in zip(lo, hi, grid):
        edges.append([(max(x, a), min(x + g, b)) for x in range(a // g * g, b, g)])
    return [Selection.box([e[0] for e in combo], [e[1] - e[0] for e in combo]) for combo in itertools.product(*edges)]


def walks_backwards(blocks: Sequence[AccessRecord]) -> bool:
    """The program read its blocks mostly from the last towards the first (C order of their starts): more of its
    consecutive reads step back than forward. dask's scheduler orders a reduction's blocks from the last key
    (``dask.order``): r04's 16 traced blocks went 15, 12, 13, 14, 3, 2, 1, 0, 7, ... and, with the recipe's dask
    chunks, its 4 blocks went 3, 2, 1, 0. The recipe's blocks are replayed in the same direction, because cold
    reads depend on it: the kernel's readahead serves a read that follows the previous one in the file, not one
    before it (r04's recipe layout, read backwards as the program does, replays about 1.3x slower than forwards:
    ``benchmarks/validation/realsize.py``'s recipe against verify)."""
    timed = sorted(blocks, key=lambda a: a.t_start)
    steps = [(b.selection.start > a.selection.start) - (b.selection.start < a.selection.start)
             for a, b in zip(timed, timed[1:])]
    return sum(steps) < 0


def recipe_reads(accesses: Sequence[AccessRecord], shape: Sequence[int], chunks: Sequence[int] | None,
                 blocking) -> list[AccessRecord] | None:
    """One dataset's accesses as the recipe's program makes them in a layout of ``chunks`` (None: contiguous):
    the blocks of ``blocking`` (``advisor.choice.Blocking``, the traced dask grid) replaced by the recipe's dask
    blocks over the same region, in the traced blocks' time span and in the direction they were read
    (``walks_backwards``). None when there is nothing to replace (no blocks on the grid, writes, several ranks) or
    the recipe's blocks are the traced ones."""
    from advisor.idiom import dask_chunks

    if blocking is None or not accesses or any(a.op != READ for a in accesses) or len({a.rank for a in accesses}) > 1:
        return None
    shape = tuple(int(s) for s in shape)
    on = [_on_grid(a.selection, blocking.shape, blocking.origin, shape) for a in accesses]
    blocks = [a for a, k in zip(accesses, on) if k]
    if len(blocks) < 2:
        return None
    lo = tuple(min(a.selection.start[d] for a in blocks) for d in range(len(shape)))
    hi = tuple(max(a.selection.start[d] + a.selection.block[d] for a in blocks) for d in range(len(shape)))
    grid = dask_chunks(chunks, shape, blocking.shape)
    boxes = dask_blocks(lo, hi, grid)
    if sorted(b.start for b in boxes) == sorted(a.selection.start for a in blocks) and \
            len(boxes) == len(blocks) and all(b.block == a.selection.block for b, a in
                                              zip(sorted(boxes, key=lambda b: b.start),
                                                  sorted(blocks, key=lambda a: a.selection.start))):
        return None
    if walks_backwards(blocks):
        boxes = boxes[::-1]
    first, last = min(a.t_start for a in blocks), max(a.t_start + a.duration for a in blocks)
    step = (last - first) / len(boxes)
    itemsize = blocks[0].nbytes // max(blocks[0].nelements, 1)
    out = [a for a, k in zip(accesses, on) if not k]
    out += [replace(blocks[0], selection=b, nelements=b.nelements, nbytes=b.nelements * itemsize,
                    t_start=first + k * step, duration=step) for k, b in enumerate(boxes)]
    return sorted(out, key=lambda a: a.t_start)


def priced_as_recipe(rec, ds, accesses: Sequence[AccessRecord], shape: Sequence[int], blocking, profile, *,
                     procs: int = 1, calibration=None, codec=None):
    """``rec`` (a ``Recommendation``) priced on the reads the recipe's program makes in its layout: its seconds,
    interval and terms times the model's price of those reads over its price of the traced ones in the same
    layout (one model for both, so the trace's calibration carries over); ``rec`` itself when the reads are the
    traced ones."""
    from advisor.costmodel import CostModel

    reads = recipe_reads(accesses, shape, rec.candidate.chunks, blocking)
    if reads is None:
        return rec
    traced = CostModel(ds, list(accesses), shape, profile, procs=procs, calibration=calibration)
    recipe = CostModel(ds, reads, shape, profile, procs=procs, calibration=calibration)
    before, after = traced.evaluate(rec.candidate, codec), recipe.evaluate(rec.candidate, codec)
    if before.seconds <= 0:
        return rec
    f, g = after.seconds / before.seconds, rec.seconds / before.seconds
    return replace(rec, seconds=rec.seconds * f, seconds_ci=tuple(x * f for x in rec.seconds_ci),
                   terms={k: t * g for k, t in after.terms.items()},
                   notes=tuple(rec.notes) + (f"priced on the {len(reads)} reads the program makes with the recipe's "
                                             "dask chunks", ))


__all__ = ["dask_blocks", "priced_as_recipe", "recipe_reads", "walks_backwards"]
