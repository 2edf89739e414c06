"""Black-box estimator: compress sampled contiguous blocks with the real codec and scale up.

Two regimes, by how many target chunks fit in the sample budget:

- ``"chunks"``: at least MIN_BLOCKS whole chunks fit. Chunks are picked by systematic sampling of the chunk
  grid (random start), read, zero-padded at the array edge exactly as HDF5/Zarr pad edge chunks, and
  compressed; stored bytes = n_chunks x mean bytes per chunk (same for seconds).
- ``"tiles"``: chunks are too large for the budget. Interior chunks are represented by tiles shaped like the
  chunk, scaled down, sampled by helper E's ``sampling.sample_blocks`` (stratified or random by measured
  skew). Each tile is compressed whole and as its 2^d half-edge sub-blocks; the two sizes give a per-stream
  fixed cost ``a`` (headers, Huffman tables, predictor warm-up) and a per-point cost ``b``:
  bytes(n) = a + b n, so an interior chunk costs a + b * chunk_points. Time: the fixed per-call time is the
  median of a few tiny-block calls, the rest is per point. Edge chunks (partly padding, which changes both
  size and speed a lot, e.g. 4x slower for the HDF5 SZ3 filter) are measured directly: up to MAX_EDGE of
  them are compressed whole and stand for all edge chunks.

The 95% intervals are bootstrap percentiles over the blocks. The wall time of the whole estimate is kept
by the caller in ``cost_seconds`` so the estimation budget (5% of compressing the field) can be checked.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from compression_model.error_bound import ErrorStats
from compression_model.sampling import sample_blocks

MIN_BLOCKS = 8
"""Fewest blocks behind an estimate (the bootstrap needs a spread)."""
MIN_TILE_POINTS = 1024
"""Smallest tile: below this, fixed per-stream costs dominate what is measured."""
MAX_EDGE = 2
"""Edge chunks measured whole in the tiles regime."""
N_BOOTSTRAP = 400
FEW = 4
"""Blocks also decoded (and, for tiles, split into halves)."""
TINY_REPEATS = 5


@dataclass(frozen=True)
class BlockMeasurements:
    """Per sampled block: points, compressed bytes, seconds; tiles also as 2^d halves; edge chunks apart."""

    regime: str  # "chunks" | "tiles"
    points: np.ndarray
    nbytes: np.ndarray
    comp_s: np.ndarray
    decomp_s: np.ndarray  # the first FEW blocks only
    nbytes_halves: np.ndarray  # tiles regime only, first FEW blocks
    n_halves: int
    call_s: float  # fixed seconds per compress call (tiles regime)
    edge_points: np.ndarray  # array points (not padding) in each measured edge chunk
    edge_nbytes: np.ndarray  # measured edge chunks (tiles regime)
    edge_comp_s: np.ndarray
    edge_decomp_s: np.ndarray
    errors: ErrorStats | None


def _codec_calls(codec, target: str, shapes, dtype):
    """(encode, decode) of the target library; HDF5's in-memory datasets are created before any timing."""
    if target == "hdf5":
        from compression_model.codecs.hdf5_filter import prepare

        kwargs = codec.hdf5_kwargs()
        for shape in set(shapes):
            prepare(kwargs, shape, dtype)
        return codec.hdf5_encode, codec.hdf5_decode
    if target == "zarr":
        return codec.encode, codec.decode
    raise ValueError(f"target must be hdf5 or zarr, not {target!r}")


def chunk_grid(shape, chunks) -> tuple:
    return tuple(math.ceil(s / c) for s, c in zip(shape, chunks))


def _read_chunk(data, index, shape, chunks) -> np.ndarray:
    """Chunk ``index`` of the grid, zero-padded at the array edge as HDF5/Zarr pad it (fill value 0)."""
    sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))
    part = np.asarray(data[sel])
    if part.shape != tuple(chunks):
        part = np.pad(part, [(0, c - p) for c, p in zip(chunks, part.shape)])
    return np.ascontiguousarray(part)


def _systematic(n: int, k: int, rng) -> np.ndarray:
    step = n / k
    return np.unique(np.minimum((rng.uniform(0, step) + step * np.arange(k)).astype(np.int64), n - 1))


def edge_chunks(shape, chunks) -> list[tuple]:
    """Grid indices of the chunks that stick out of the array (C order)."""
    grid = chunk_grid(shape, chunks)
    last = [g - 1 if s % c else None for g, s, c in zip(grid, shape, chunks)]
    return [idx for idx in itertools.product(*map(range, grid)) if any(i == e for i, e in zip(idx, last))]


def valid_points(index, shape, chunks) -> int:
    """Points of chunk ``index`` inside the array (the rest is padding)."""
    return int(np.prod([min(c, s - i * c) for i, c, s in zip(index, chunks, shape)]))


def _halves(block: np.ndarray) -> list[np.ndarray]:
    """The 2^d sub-blocks of half edge (dimensions of extent 1 are not split)."""
    parts = [block]
    for axis, n in enumerate(block.shape):
        if n >= 2:
            parts = [p for q in parts for p in np.array_split(q, 2, axis=axis)]
    return [np.ascontiguousarray(p) for p in parts]


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def measure_blocks(data, codec, chunks, *, sample_fraction=0.01, target="hdf5", seed=0,
                   data_range=None) -> BlockMeasurements:
    """Read and compress the sample of ``data`` for chunk shape ``chunks``."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in data.shape)
    chunks = tuple(int(c) for c in chunks)
    n_total = int(np.prod(shape, dtype=np.int64))
    chunk_points = int(np.prod(chunks, dtype=np.int64))
    grid = chunk_grid(shape, chunks)
    n_chunks = int(np.prod(grid, dtype=np.int64))
    budget = max(sample_fraction * n_total, MIN_BLOCKS * MIN_TILE_POINTS)

    edges, edge_points, call_s, halves = [], [], 0.0, []
    if budget >= MIN_BLOCKS * chunk_points or n_chunks <= MIN_BLOCKS:
        regime = "chunks"
        k = min(n_chunks, max(MIN_BLOCKS, math.ceil(budget / chunk_points)))
        blocks = [_read_chunk(data, np.unravel_index(i, grid), shape, chunks) for i in _systematic(n_chunks, k, rng)]
    else:
        regime = "tiles"
        scale = (max(budget / MIN_BLOCKS, MIN_TILE_POINTS) / chunk_points) ** (1.0 / len(shape))
        tile = tuple(max(1, min(c, round(c * scale))) for c in chunks)
        blocks = list(sample_blocks(data, min(1.0, budget / n_total), block_shape=tile, rng=rng).blocks)
        all_edges = edge_chunks(shape, chunks)
        if all_edges:
            picks = _systematic(len(all_edges), min(MAX_EDGE, len(all_edges)), rng)
            edges = [_read_chunk(data, all_edges[i], shape, chunks) for i in picks]
            edge_points = [valid_points(all_edges[i], shape, chunks) for i in picks]
        tiny = np.ascontiguousarray(blocks[0][tuple(slice(0, 4) for _ in shape)])
    shapes = [b.shape for b in blocks + edges] + [h.shape for h in _halves(blocks[0])] * (regime == "tiles")
    encode, decode = _codec_calls(codec, target, shapes + [tiny.shape] * (regime == "tiles"), blocks[0].dtype)
    if regime == "tiles":
        call_s = float(np.median([_timed(encode, tiny)[1] for _ in range(TINY_REPEATS)]))

    def run(block_list, n_decoded):
        """Compress every block; decode the first ``n_decoded`` (decompression time and errors)."""
        sizes, comp, decomp, pairs = [], [], [], []
        for i, block in enumerate(block_list):
            buf, t = _timed(encode, block)
            sizes.append(len(buf))
            comp.append(t)
            if i < n_decoded:
                out, t_dec = _timed(decode, buf, block.shape, block.dtype)
                decomp.append(t_dec)
                pairs.append((block, out))
        return np.array(sizes, float), np.array(comp), np.array(decomp), pairs

    # Decoding and splitting into halves serve the time ratio, the errors and the fixed cost ``a``, which
    # vary little between blocks: a few blocks suffice, and the estimate stays within its cost budget.
    nbytes, comp_s, decomp_s, pairs = run(blocks, FEW)
    e_nbytes, e_comp, e_decomp, e_pairs = run(edges, len(edges))
    if regime == "tiles":
        halves = [sum(len(encode(h)) for h in _halves(b)) for b in blocks[:FEW]]
    errors = None
    if codec.lossy:
        original = np.concatenate([b.ravel() for b, _ in pairs + e_pairs])
        decoded = np.concatenate([np.asarray(o).ravel() for _, o in pairs + e_pairs])
        errors = ErrorStats.measure(original, decoded, data_range if data_range is not None else 0.0)
    return BlockMeasurements(
        regime, np.array([b.size for b in blocks], float), nbytes, comp_s, decomp_s, np.array(halves, float),
        2 ** sum(1 for c in blocks[0].shape if c >= 2), call_s, np.array(edge_points, float), e_nbytes, e_comp,
        e_decomp, errors)


def scale_up(m: BlockMeasurements, shape, chunks, idx: np.ndarray | None = None):
    """Whole-field (stored bytes, compress s, decompress s); ``idx`` (B, k) resamples blocks (bootstrap)."""
    if idx is None:
        idx = np.arange(m.points.size)[None, :]
    n_total = int(np.prod(shape, dtype=np.int64))
    n_chunks = int(np.prod(chunk_grid(shape, chunks), dtype=np.int64))
    # decompression: measured on the first FEW blocks, scaled by their decompress/compress time ratio
    dec_per_comp = m.decomp_s.sum() / m.comp_s[: m.decomp_s.size].sum()
    if m.regime == "chunks":
        stored, comp = (v[idx].mean(axis=1) * n_chunks for v in (m.nbytes, m.comp_s))
        return stored, comp, comp * dec_per_comp

    k = idx.shape[1]
    n = m.points[idx].sum(axis=1)
    chunk_points = int(np.prod(chunks, dtype=np.int64))
    edges = edge_chunks(shape, chunks)
    n_edge = len(edges)
    edge_valid = sum(valid_points(e, shape, chunks) for e in edges)
    n_in, pts_in = n_chunks - n_edge, n_total - edge_valid
    # bytes(n) = a + b n per stream, from whole tiles and their halves (a >= 0: no credit for splitting)
    few = m.nbytes_halves.size
    a = max((m.nbytes_halves - m.nbytes[:few]).sum() / (few * (m.n_halves - 1)), 0.0)
    b = (m.nbytes[idx].sum(axis=1) - k * a) / n
    # seconds(n) = call_s + per_point n
    per_point = np.maximum(m.comp_s[idx].sum(axis=1) - k * m.call_s, 0.0) / n

    def total(fixed, per, edge_measured):
        """Interior chunks by the linear model; edge chunks = the same model on their array points plus a
        per-padding-point cost fitted on the measured edge chunks (padding can be cheap or, for a
        predictor hitting a cliff of zeros, expensive)."""
        out = fixed * n_in + per * pts_in
        if n_edge:
            pad_measured = (chunk_points - m.edge_points).sum()
            rest = edge_measured.sum() - fixed * m.edge_points.size - per * m.edge_points.sum()
            pad = rest / pad_measured if pad_measured else 0.0
            out = out + fixed * n_edge + per * edge_valid + pad * (n_edge * chunk_points - edge_valid)
        return out

    stored = total(a, b, m.edge_nbytes)
    comp = total(m.call_s, per_point, m.edge_comp_s)
    return stored, comp, comp * dec_per_comp


def bootstrap(m: BlockMeasurements, shape, chunks, seed: int = 0):
    """Bootstrap replicates of ``scale_up`` (resampling the blocks; edge chunks and the fixed cost per
    stream are kept as measured)."""
    rng = np.random.default_rng(seed)
    k = m.points.size
    return scale_up(m, shape, chunks, rng.integers(0, k, size=(N_BOOTSTRAP, k)))
