"""Gray-box compression ratio for a given chunk shape (zPerf stages 2-3, chunk-aware).

Each sampled block is cut into tiles of the chunk shape (or the whole block when the chunk is larger);
a tile is modeled as one independent compression call, as the HDF5 filter / Zarr codec compresses each
chunk on its own: SZ3/SZ via :mod:`graybox_sz`, ZFP via :mod:`graybox_zfp`. Per-point payload is
extrapolated to the field; per-chunk costs (filter header, Huffman tree, 64-bit stream padding) are
counted once per chunk of the real chunk grid, edge chunks included.
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
import math

import numpy as np

from instrumentation.errors import InputError

from . import graybox_sz, graybox_zfp

GRAYBOX_CODECS = ("sz3", "sz", "zfp")
#: sample floor for the gray-box model (points): below it tiles lack predictor context (pass as
#: ``sample_blocks(..., min_points=MIN_SAMPLE_POINTS)``).
MIN_SAMPLE_POINTS = 32768
_Z95 = 1.959964


@dataclass(frozen=True)
class StageCounts:
    """Counted quantities of one compression of the whole field (inputs of the time model)."""

    n_points: int
    itemsize: int
    n_chunks: int
    eta: float = 1.0  # share of predictable points (zPerf eta); 1 for transform/lossless codecs
    n_codes: float = 0.0  # mean distinct quantization codes per chunk (Huffman tree size)
    huffman_bytes: float = 0.0  # encoded codes, whole field
    lossless_in_bytes: float = 0.0  # bytes handed to the lossless pass (zstd), whole field
    n_blocks: int = 0  # ZFP 4^d blocks
    out_bytes: float = 0.0  # compressed bytes

    @property
    def n_unpred(self) -> float:
        return self.n_points * (1.0 - self.eta)

    def get_config(self) -> dict:
        return asdict(self)

    @classmethod
    def from_config(cls, config: dict) -> "StageCounts":
        return cls(**config)


@dataclass(frozen=True)
class RatioEstimate:
    """Predicted ratio of one (codec, absolute error bound, chunk shape) on one field."""

    codec: str
    abs_error: float
    chunks: tuple
    ratio: float
    ratio_ci: tuple  # 95% interval
    original_bytes: int
    compressed_bytes: float
    counts: StageCounts
    method: str = "graybox"

    def get_config(self) -> dict:
        d = asdict(self)
        d["chunks"] = list(self.chunks)
        d["ratio_ci"] = list(self.ratio_ci)
        d["counts"] = self.counts.get_config()
        return d

    @classmethod
    def from_config(cls, config: dict) -> "RatioEstimate":
        c = dict(config)
        c["chunks"] = tuple(c["chunks"])
        c["ratio_ci"] = tuple(c["ratio_ci"])
        c["counts"] = StageCounts.from_config(c["counts"])
        return cls(**c)


def _tiles(sample, chunks):
    """Group chunk-shaped tiles cut from the sample blocks: {tile_shape: [(block_index, array), ...]}."""
    groups = {}
    for bi, b in enumerate(sample.blocks):
        t = tuple(min(c, s) for c, s in zip(chunks, b.shape))
        counts = [s // e for s, e in zip(b.shape, t)]
        for idx in np.ndindex(*counts):
            sl = tuple(slice(i * e, (i + 1) * e) for i, e in zip(idx, t))
            groups.setdefault(t, []).append((bi, b[sl]))
    return groups


def _bootstrap_log_sd(per_block_bytes, per_block_points, rng, n_boot=200):
    """Standard deviation of log(total bytes per point) under resampling of blocks."""
    b = np.asarray(per_block_bytes, float)
    p = np.asarray(per_block_points, float)
    if b.size < 2:
        return 0.0
    idx = rng.integers(0, b.size, size=(n_boot, b.size))
    est = b[idx].sum(axis=1) / np.maximum(p[idx].sum(axis=1), 1)
    return float(np.std(np.log(np.maximum(est, 1e-300))))


#: Regression terms per tile; the byte count of a tile is terms @ coef (profile.ratio[codec]["coef"]).
#: Extensive terms grow with the points of a chunk, intensive ones are paid once per chunk.
TERMS = {"sz3": ("header", "stream_zstd", "tree_codes", "unpred"),
         "sz": ("header", "stream_zstd", "tree_codes", "unpred"),
         "zfp": ("header", "zfp_stream")}
INTENSIVE = {"header", "tree_codes"}


def tile_terms(stack: np.ndarray, codec: str, abs_error: float, itemsize: int, rng=None):
    """(terms (n_tiles, len(TERMS[codec])), stage counts dict) for same-shape tiles ``stack`` (B, *tile)."""
    n = stack.shape[0]
    if codec == "zfp":
        blocks = graybox_zfp.to_blocks(stack, batch=True)  # (n_tiles, blocks per tile, 4, ..)
        bits = graybox_zfp.block_bits(blocks.reshape((-1,) + blocks.shape[2:]), abs_error, itemsize)
        bits = -(-bits.reshape(n, -1).sum(axis=1) // 64) * 64  # zfp streams end on a 64-bit word
        terms = np.column_stack([np.ones(n), bits / 8.0])
        return terms, {"n_blocks": blocks.shape[1] * n, "n_unpred": 0, "n_codes": 0.0,
                       "huffman": 0.0, "lossless_in": 0.0}
    if codec == "sz3":
        interp = graybox_sz.tile_sizes(stack, abs_error, "interp", itemsize, rng=rng)
        lorenzo = graybox_sz.tile_sizes(stack, abs_error, "lorenzo", itemsize, rng=rng)
        picks = [graybox_sz.sz3_predictor(it, lo) for it, lo in zip(interp, lorenzo)]
        sizes = [lo if p == "lorenzo" else it for p, it, lo in zip(picks, interp, lorenzo)]
    else:  # SZ2: blockwise Lorenzo/regression
        sizes = graybox_sz.tile_sizes(stack, abs_error, "lorenzo", itemsize, rng=rng)
    terms = np.array([[1.0, t.stream_zstd_bytes, t.n_distinct, t.unpred_bytes] for t in sizes])
    return terms, {"n_blocks": 0, "n_unpred": sum(t.n_unpred for t in sizes),
                   "n_codes": [t.n_distinct for t in sizes],
                   "huffman": sum(t.huffman_bytes for t in sizes),
                   "lossless_in": sum(t.huffman_bytes + t.unpred_bytes for t in sizes)}


def graybox_ratio(sample, codec_name: str, abs_error: float, chunks=None, profile=None,
                  rng=None) -> RatioEstimate:
    """Predicted compression ratio of ``codec_name`` at ``abs_error`` for chunk shape ``chunks``.

    ``sample``: a :class:`~compression_model.sampling.Sample`, best drawn with
    ``sample_blocks(data, fraction, chunks=chunks)`` so blocks are whole chunks or chunk-aligned pieces.
    ``chunks`` None: one chunk = the field. NaN/Inf must be handled by the caller (ZFP cannot hold them;
    SZ stores them as unpredictable values).
    """
    from .profile import load_profile

    if codec_name not in GRAYBOX_CODECS:
        raise InputError(f"gray-box model covers {', '.join(GRAYBOX_CODECS)}, not {codec_name!r}")
    if not abs_error > 0:
        raise InputError(f"absolute error bound must be > 0, got {abs_error}")
    profile = profile or load_profile()
    rng = np.random.default_rng(rng)
    shape = tuple(sample.shape)
    chunks = tuple(int(c) for c in (chunks or shape))
    if len(chunks) != len(shape) or any(c < 1 for c in chunks):
        raise InputError(f"chunk shape {chunks} does not fit array shape {shape}")
    itemsize = int(np.dtype(sample.dtype).itemsize)
    n_total = sample.n_total
    n_chunks = math.prod(-(-s // c) for s, c in zip(shape, chunks))
    chunk_pts = math.prod(min(c, s) for c, s in zip(chunks, shape))
    p = profile.ratio_params(codec_name)
    coef = np.asarray(p["coef"], dtype=float)
    intensive = np.array([t in INTENSIVE for t in TERMS[codec_name]])

    nb = len(sample.blocks)
    blk_ext = np.zeros(nb)  # extensive bytes per block
    blk_points = np.zeros(nb)
    int_rows, n_codes = [], []
    piece = False
    n_unpred = n_blocks = 0
    huff = lossless_in = 0.0
    for tshape, items in _tiles(sample, chunks).items():
        bidx = np.array([i for i, _ in items])
        stack = np.stack([a for _, a in items]).astype(np.float64)
        terms, c = tile_terms(stack, codec_name, abs_error, itemsize, rng)
        np.add.at(blk_ext, bidx, terms[:, ~intensive] @ coef[~intensive])
        np.add.at(blk_points, bidx, stack[0].size)
        int_rows.append(terms[:, intensive])
        piece |= stack[0].size < chunk_pts
        n_unpred += c["n_unpred"]
        n_blocks += c["n_blocks"]
        n_codes += list(np.atleast_1d(c["n_codes"]))
        huff += c["huffman"]
        lossless_in += c["lossless_in"]

    sampled = float(blk_points.sum())
    ints = np.concatenate(int_rows)
    # A tile smaller than the chunk is a piece of it: the chunk's tree holds at least the richest tile's codes.
    per_chunk_int = (ints.max(axis=0) if piece else ints.mean(axis=0)) @ coef[intensive]
    total = blk_ext.sum() / sampled * n_total + n_chunks * per_chunk_int
    ratio = n_total * itemsize / total
    sd = math.hypot(_bootstrap_log_sd(blk_ext + per_chunk_int * blk_points / chunk_pts, blk_points, rng),
                    p["log_sigma"])
    ci = (ratio * math.exp(-_Z95 * sd), ratio * math.exp(_Z95 * sd))
    scale = n_total / sampled
    counts = StageCounts(
        n_points=n_total, itemsize=itemsize, n_chunks=n_chunks,
        eta=1.0 - n_unpred / sampled, n_codes=float(np.mean(n_codes)) if n_codes else 0.0,
        huffman_bytes=huff * scale, lossless_in_bytes=lossless_in * scale,
        n_blocks=int(round(n_blocks * scale)), out_bytes=total,
    )
    return RatioEstimate(codec_name, float(abs_error), chunks, ratio, ci, n_total * itemsize, total, counts)
