"""Block plans for copying one array into another chunk grid in bounded memory.

A plan is one or two stages. Each stage reads blocks of the same shape on a
regular grid and writes them whole, so every write covers whole chunks (or
shards) of what it writes to and every read covers whole chunks of what it
reads:

- one stage when a block aligned to both grids (per axis the least common
  multiple of the two chunk sizes) fits the block budget: every source chunk is
  then read once and every target chunk written once;
- otherwise two stages through an intermediate array, as rechunker does: the
  source is read in blocks of whole source chunks, written to the
  intermediate, and read back from it in blocks of whole target chunks. The
  intermediate is an uncompressed contiguous HDF5 dataset allocated at
  creation: any block reads and writes it at fixed offsets, and no write
  changes its metadata, so a killed write never damages a finished block (map chunks (1, 360, 720) to pencils (1460, 8, 8): no block aligned
  to both fits in memory, see benchmarks/validation/apply.py).

``consolidate_chunks`` and ``multistage_rechunking_plan`` are ported from
rechunker (rechunker/algorithm.py, MIT License, Copyright (c) 2020 Rechunker
Developers); rechunker 0.5.4 requires zarr<3 and cannot be installed beside
zarr 3. The port keeps its single-stage search only and drops its logging.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

from instrumentation.errors import InputError


def consolidate_chunks(shape: Sequence[int], chunks: Sequence[int], itemsize: int, max_mem: int,
                       chunk_limits: Sequence[int | None] | None = None) -> tuple[int, ...]:
    """Grow ``chunks`` by whole multiples, last axis first, up to ``max_mem`` bytes (rechunker's
    ``consolidate_chunks``). ``chunk_limits``: per axis the largest size (None: do not grow that axis)."""
    ndim = len(shape)
    limits = list(shape) if chunk_limits is None else list(chunk_limits)
    per_axis = {}
    for axis, limit in enumerate(limits):
        if limit is not None:
            per_axis[axis] = min(max(limit, chunks[axis]), shape[axis]) if limit != -1 else shape[axis]
    chunk_mem = itemsize * math.prod(chunks)
    if chunk_mem > max_mem:
        raise InputError(f"a chunk of {chunk_mem} bytes exceeds the block budget of {max_mem} bytes")
    headroom = max_mem / chunk_mem
    new = list(chunks)
    for axis in sorted(per_axis, reverse=True):
        upper = min(shape[axis], per_axis[axis])
        new[axis] = upper
        mem = itemsize * math.prod(new)
        if max_mem / mem > 1:
            headroom = max_mem / mem
        else:
            new[axis] = min(int(chunks[axis] * int(headroom)), upper)
            headroom = max_mem / (itemsize * math.prod(new))
    assert len(new) == ndim
    return tuple(new)


def rechunking_plan(shape: Sequence[int], source_chunks: Sequence[int], target_chunks: Sequence[int],
                    itemsize: int, max_mem: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(read, intermediate, write) chunks of rechunker's single-stage plan: writes are the target chunks
    consolidated up to ``max_mem``, reads the source chunks consolidated along the axes where the writes
    are larger, the intermediate the smaller of the two per axis."""
    write = consolidate_chunks(shape, target_chunks, itemsize, max_mem)
    limits = [w if w > s else None for s, w in zip(source_chunks, write)]
    read = consolidate_chunks(shape, source_chunks, itemsize, max_mem, limits)
    inter = tuple(min(r, w) for r, w in zip(read, write))
    return read, inter, write


@dataclass(frozen=True)
class Stage:
    """Copy ``shape`` in blocks of ``block`` (the last ones clipped at the edges)."""

    shape: tuple[int, ...]
    block: tuple[int, ...]

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(-(-s // b) if b else 0 for s, b in zip(self.shape, self.block))

    @property
    def n_blocks(self) -> int:
        return math.prod(self.grid) if self.shape else 1

    def region(self, index: int) -> tuple[slice, ...]:
        """The selection of block ``index`` (C order over the block grid)."""
        coords = []
        for n in reversed(self.grid):
            index, c = divmod(index, n)
            coords.append(c)
        return tuple(slice(c * b, min((c + 1) * b, s))
                     for c, b, s in zip(reversed(coords), self.block, self.shape))

    def regions(self) -> Iterator[tuple[int, tuple[slice, ...]]]:
        for i in range(self.n_blocks):
            yield i, self.region(i)

    def get_config(self) -> dict:
        return {"shape": list(self.shape), "block": list(self.block)}

    @classmethod
    def from_config(cls, c: dict) -> "Stage":
        return cls(tuple(c["shape"]), tuple(c["block"]))


@dataclass(frozen=True)
class CopyPlan:
    """One stage (direct) or two (source -> contiguous intermediate -> target)."""

    stages: tuple[Stage, ...]

    @property
    def two_pass(self) -> bool:
        return len(self.stages) == 2

    def get_config(self) -> dict:
        return {"stages": [s.get_config() for s in self.stages]}

    @classmethod
    def from_config(cls, c: dict) -> "CopyPlan":
        return cls(tuple(Stage.from_config(s) for s in c["stages"]))


def _lcm_clipped(a: Sequence[int], b: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(min(math.lcm(x, y), s) for x, y, s in zip(a, b, shape))


def plan_copy(shape: Sequence[int], itemsize: int, source_grid: Sequence[int] | None,
              target_grid: Sequence[int] | None, budget: int) -> CopyPlan:
    """The block plan of one array. ``source_grid``/``target_grid``: chunk (or shard) shapes, None for a
    contiguous array (any block reads or writes it without waste: the other grid is used)."""
    shape = tuple(int(s) for s in shape)
    if not shape or 0 in shape:
        return CopyPlan((Stage(shape, tuple(max(s, 1) for s in shape)),))
    full = lambda g: tuple(min(max(int(c), 1), s) for c, s in zip(g, shape))  # noqa: E731
    if source_grid is None and target_grid is None:
        rows = tuple([1] + list(shape[1:]))
        source_grid = target_grid = rows if itemsize * math.prod(rows) <= budget else (1,) * len(shape)
    src = full(source_grid if source_grid is not None else target_grid)
    dst = full(target_grid if target_grid is not None else source_grid)
    for name, g in (("source chunk", src), ("target chunk (or shard)", dst)):
        if itemsize * math.prod(g) > budget:
            raise InputError(f"a {name} of {itemsize * math.prod(g)} bytes does not fit the block budget of "
                             f"{budget} bytes: raise --max-memory")
    both = _lcm_clipped(src, dst, shape)
    if itemsize * math.prod(both) <= budget:
        return CopyPlan((Stage(shape, consolidate_chunks(shape, both, itemsize, budget)),))
    read, _, write = rechunking_plan(shape, src, dst, itemsize, budget)
    if read == write:
        return CopyPlan((Stage(shape, read),))
    return CopyPlan((Stage(shape, read), Stage(shape, write)))
