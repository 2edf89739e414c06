"""Contiguous block sampling of an N-d array (zPerf stage 1: features come from a sample).

Prediction-based compressors predict each point from its neighbours, so a sample is a set of
contiguous blocks, never scattered points. Two layouts:

- ``"stratified"``: one block per cell of a regular grid over the array (smooth/uniform data: every
  region is represented once, the estimate has the variance of systematic sampling);
- ``"random"``: more, smaller tiles at uniformly random positions (skewed/sparse data, where a few
  regions carry most of the information and a regular grid can alias with the structure).

The layout is chosen from a measured feature, the skew of activity (Gini coefficient of the per-block
mean absolute adjacent difference, or share of constant blocks) on a pilot of stratified blocks
(see :func:`block_skew`).
``data`` may be a numpy array or anything sliceable with ``.shape``/``.dtype`` (h5py Dataset, zarr
Array): only the sampled blocks are read.
"""
from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from instrumentation.errors import InputError

#: points per block by default: large enough that boundary points (no full predictor context) stay
#: a small share, small enough that a 1% sample of a few-MB field still has several blocks.
DEFAULT_BLOCK_POINTS = {1: 8192, 2: 64 * 64, 3: 24 * 24 * 24}
#: Gini coefficient of per-block activity above which the data counts as skewed/sparse.
SKEW_THRESHOLD = 0.5
#: default blocks shrink (down to MIN_BLOCK_POINTS) so that a small budget still has MIN_BLOCKS blocks.
MIN_BLOCKS = 8
MIN_BLOCK_POINTS = 256


@dataclass(frozen=True)
class Sample:
    """Blocks read from an array; ``weights[i]`` is the share of the array block ``i`` stands for."""

    blocks: tuple  # tuple[np.ndarray, ...], each C-contiguous, in the array's dtype
    origins: tuple  # tuple[tuple[int, ...], ...], start index of each block
    shape: tuple  # full array shape
    dtype: np.dtype
    block_shape: tuple  # nominal block shape (edge blocks may be smaller)
    strategy: str  # "stratified" | "random" | "full"
    skew: float  # measured Gini coefficient that chose the strategy

    @property
    def n_total(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def n_sampled(self) -> int:
        return int(sum(b.size for b in self.blocks))

    @property
    def fraction(self) -> float:
        return self.n_sampled / max(self.n_total, 1)

    @property
    def weights(self) -> np.ndarray:
        sizes = np.array([b.size for b in self.blocks], dtype=float)
        return sizes / sizes.sum()


def default_block_shape(shape, max_points=None) -> tuple:
    """A near-cubic block of about DEFAULT_BLOCK_POINTS[ndim] points, clipped to ``shape``.

    Dimensions of extent < 4 are taken whole (they carry no useful predictor context when cut).
    """
    shape = tuple(int(s) for s in shape)
    nd = len(shape)
    target = max_points or DEFAULT_BLOCK_POINTS.get(min(nd, 3), 4096)
    block = [s if s < 4 else 0 for s in shape]
    free = [i for i, b in enumerate(block) if b == 0]
    fixed = int(np.prod([b for b in block if b], dtype=np.int64)) or 1
    remaining = max(target // fixed, 1)
    # Fill the free dims from the smallest extent up so a thin dimension is taken whole.
    for k, i in enumerate(sorted(free, key=lambda j: shape[j])):
        edge = int(round(remaining ** (1.0 / (len(free) - k))))
        block[i] = max(1, min(shape[i], edge))
        remaining = max(remaining // block[i], 1)
    return tuple(block)


def _grid_origins(shape, block_shape, n_blocks, rng):
    """Origins of ``n_blocks`` blocks, one per cell of a near-regular grid, jittered inside its cell."""
    nd = len(shape)
    slots = [max(1, s // b) for s, b in zip(shape, block_shape)]
    total = int(np.prod(slots, dtype=np.int64))
    n_blocks = min(n_blocks, total)
    # Per-dimension counts proportional to the number of slots (systematic sampling of the grid),
    # rounded down then grown on the least-sampled dimension until the budget is met.
    scale = (n_blocks / total) ** (1.0 / nd)
    counts = [max(1, min(sl, int(sl * scale))) for sl in slots]
    while int(np.prod(counts, dtype=np.int64)) < n_blocks:
        i = max((j for j in range(nd) if counts[j] < slots[j]), key=lambda j: slots[j] / counts[j])
        counts[i] += 1
    axes = []
    for s, b, c in zip(shape, block_shape, counts):
        width = (s - b + 1) / c  # origins range over [0, s - b]; one jittered origin per cell
        starts = np.floor((np.arange(c) + rng.uniform(0, 1, size=c)) * width).astype(np.int64)
        axes.append(np.clip(starts, 0, s - b))
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, nd)
    return [tuple(int(v) for v in o) for o in grid]


def _random_origins(shape, block_shape, n_blocks, rng):
    """Uniformly random, non-identical origins."""
    hi = np.array([max(s - b, 0) + 1 for s, b in zip(shape, block_shape)])
    picks = rng.integers(0, hi, size=(n_blocks * 2, len(shape)))
    uniq = np.unique(picks, axis=0)
    uniq = uniq[rng.permutation(len(uniq))][:n_blocks]
    return [tuple(int(v) for v in o) for o in uniq]


def _read(data, origins, block_shape):
    out = []
    for o in origins:
        sl = tuple(slice(a, a + b) for a, b in zip(o, block_shape))
        out.append(np.ascontiguousarray(np.asarray(data[sl])))
    return out


def block_skew(blocks) -> float:
    """Skew of activity across blocks: the larger of the Gini coefficient of per-block mean |adjacent
    difference| (0: uniform, 1: all in one block) and the share of constant blocks (sparse/masked data).

    Non-finite values are ignored; a block with no finite difference counts as zero activity.
    """
    act = []
    for b in blocks:
        b = np.asarray(b, dtype=np.float64)
        if b.ndim == 0 or b.size < 2:
            act.append(0.0)
            continue
        axis = int(np.argmax(b.shape))
        d = np.abs(np.diff(b, axis=axis))
        d = d[np.isfinite(d)]
        act.append(float(d.mean()) if d.size else 0.0)
    a = np.sort(np.array(act))
    if a.size < 2:
        return 0.0
    constant = float((a == 0).mean())  # sparse/masked data: many blocks without any variation
    if a.sum() <= 0:
        return constant
    n = a.size
    return max(constant, float((2 * np.arange(1, n + 1) - n - 1) @ a / (n * a.sum())))


def chunk_block_shape(shape, chunks, budget_points: int) -> tuple:
    """Block shape for a chunk-aware sample: the whole chunk when MIN_BLOCKS chunks fit the budget,
    else a near-cubic piece of it with edges that are multiples of 4 (ZFP blocks, SZ3 interpolation
    levels stay aligned with the chunk's own)."""
    chunks = tuple(min(int(c), int(s)) for c, s in zip(chunks, shape))
    if math.prod(chunks) * MIN_BLOCKS <= max(budget_points, 1):
        return chunks
    per_block = max(MIN_BLOCK_POINTS, budget_points // MIN_BLOCKS)
    b = default_block_shape(chunks, per_block)
    return tuple(c if c < 4 else max(4, (x // 4) * 4) for x, c in zip(b, chunks))


def _snap(origins, shape, block_shape, chunks):
    """Move each origin onto the chunk grid so a block lies inside one chunk at a block-multiple offset."""
    out = []
    for o in origins:
        snapped = []
        for a, s, b, c in zip(o, shape, block_shape, chunks):
            c0 = (a // c) * c
            within = ((a - c0) // b) * b
            cend = min(c0 + c, s)
            if c0 + within + b > cend:
                within = max(0, cend - c0 - b)
            snapped.append(min(c0 + within, max(s - b, 0)))
        out.append(tuple(snapped))
    return list(dict.fromkeys(out))


def sample_blocks(data, fraction: float = 0.01, block_shape=None, rng=None, strategy=None,
                  chunks=None, min_points: int = 0) -> Sample:
    """Read about ``fraction`` of ``data`` as contiguous blocks.

    ``strategy`` None chooses from the measured skew: a pilot of stratified blocks (half the budget)
    is read first; if its :func:`block_skew` exceeds SKEW_THRESHOLD the rest of the budget goes to
    random tiles of half the block edge, otherwise to more stratified blocks. Arrays no larger than
    the block (or fraction >= 1) are taken whole. With ``chunks`` (the HDF5/Zarr chunk shape) blocks
    are whole chunks or chunk-aligned pieces of them (:func:`chunk_block_shape`), so each block is
    compressed as the filter would see it. ``min_points`` floors the budget (small fields: 1% is less
    than a chunk, too little predictor context for a model).
    """
    if not 0 < fraction <= 1:
        raise InputError(f"sample fraction must be in (0, 1], got {fraction}")
    rng = np.random.default_rng(rng)
    shape = tuple(int(s) for s in data.shape)
    dtype = np.dtype(data.dtype)
    n_total = int(np.prod(shape, dtype=np.int64))
    fraction = min(1.0, max(fraction, min_points / max(n_total, 1)))
    if block_shape is None and chunks is not None:
        block_shape = chunk_block_shape(shape, chunks, int(fraction * n_total))
    elif block_shape is None:
        # At least MIN_BLOCKS blocks in the budget, but blocks no smaller than MIN_BLOCK_POINTS.
        per_block = min(DEFAULT_BLOCK_POINTS.get(min(len(shape), 3), 4096),
                        max(MIN_BLOCK_POINTS, int(fraction * n_total) // MIN_BLOCKS))
        block_shape = default_block_shape(shape, per_block)
    block_shape = tuple(max(1, min(int(b), s)) for b, s in zip(block_shape, shape))
    if len(block_shape) != len(shape):
        raise InputError(f"block_shape {block_shape} does not match array rank {len(shape)}")
    bpts = int(np.prod(block_shape, dtype=np.int64))
    if fraction >= 1 or bpts >= n_total or n_total == 0:
        whole = np.ascontiguousarray(np.asarray(data[...]))
        return Sample((whole,), ((0,) * len(shape),), shape, dtype, shape, "full", 0.0)

    chunks = tuple(min(int(c), s) for c, s in zip(chunks, shape)) if chunks is not None else shape
    n_blocks = max(2, math.ceil(fraction * n_total / bpts))
    pilot_n = max(2, n_blocks // 2)
    origins = _snap(_grid_origins(shape, block_shape, pilot_n, rng), shape, block_shape, chunks)
    blocks = _read(data, origins, block_shape)
    skew = block_skew(blocks)
    chosen = strategy or ("random" if skew > SKEW_THRESHOLD else "stratified")
    if chosen not in ("stratified", "random"):
        raise InputError(f"unknown sampling strategy {strategy!r}")
    remaining = max(0, math.ceil(fraction * n_total) - sum(b.size for b in blocks))
    # The pilot blocks are kept: the second half of the budget completes the sample, so nothing
    # is read twice.
    if chosen == "stratified":
        extra = _grid_origins(shape, block_shape, math.ceil(remaining / bpts), rng) if remaining else []
        extra = [o for o in _snap(extra, shape, block_shape, chunks) if o not in set(origins)]
        extra_shape = block_shape
    else:
        extra_shape = tuple(b if b < 8 else max(4, (b // 8) * 4) for b in block_shape)
        tpts = int(np.prod(extra_shape, dtype=np.int64))
        extra = _random_origins(shape, extra_shape, math.ceil(remaining / tpts), rng) if remaining else []
        extra = _snap(extra, shape, extra_shape, chunks)
    origins = list(origins) + extra
    blocks = blocks + _read(data, extra, extra_shape)
    return Sample(tuple(blocks), tuple(origins), shape, dtype, tuple(block_shape), chosen, skew)
