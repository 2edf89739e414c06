"""Black-box estimator: compress sampled contiguous blocks with the real codec and scale up.

Two regimes, by how many target chunks fit in the sample budget:

- ``"chunks"``: at least MIN_BLOCKS whole chunks fit, or the field has at most WHOLE_CHUNKS_MAX chunks.
  The chunks fall into strata by their edge type (interior, or which axes stick out of the array: a chunk
  that is 75% padding compresses unlike an interior one); each stratum gets a share of the sample by its
  points in the array (at least one chunk), picked spread over its C order, read, zero-padded at the array
  edge exactly as HDF5/Zarr pad edge chunks, and compressed; stored bytes = sum over strata of chunks x
  mean bytes per sampled chunk (same for seconds).
- ``"tiles"``: chunks are too large for the budget. Interior chunks are represented by tiles shaped like
  the chunk, scaled down, on the grid of tile-sized cells, one per stratum of the flattened cell index.
  A tile compresses worse than the chunk it stands for (per-stream headers and Huffman tables, predictor
  warm-up at its faces, fewer SZ3 interpolation levels), by a factor that depends on the codec, the bound
  and the data. So one interior "anchor" chunk, holding the bytes-weighted median tile, is compressed whole
  *and* as tile-shaped pieces (up to MAX_PIECES of them, spread over the chunk); above the per-stream
  floor h (the bytes of an all-zero block), kappa = (bytes(chunk) - h_chunk) / sum(bytes(piece) - h_tile)
  calibrates the tiles: an interior chunk costs h_chunk + kappa x (tile bytes above h_tile per point) x its
  points. Time is not linear in the block size either (the HDF5 SZ3 filter takes 0.8 ms for 128x128 and
  26 ms for 256x256 of the same field): it is the anchor's time per chunk (best of two), scaled by the
  tiles' time per point relative to the anchor's pieces. Edge chunks (partly padding, which changes size and speed a lot) are measured
  directly: up to MAX_EDGE of them are compressed whole; a bounded per-padding-point cost fitted on them
  extends the interior model to all edges.

The 95% intervals are bootstrap percentiles over the blocks, resampled within their strata. The wall time
of the whole estimate is kept by the caller in ``cost_seconds`` so the estimation budget (5% of compressing
the field) can be checked.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from compression_model.error_bound import ErrorStats

MIN_BLOCKS = 8
"""Fewest blocks behind an estimate (the bootstrap needs a spread)."""
TARGET_TILES = 16
"""Tiles per sample when chunks do not fit: sparse fields (87% zeros in the UM sea-ice field) need many
tiles; 8 tiles of 11.6k points put the ratio 40% off there."""
WHOLE_CHUNKS_MAX = 64
"""Fields of at most this many chunks are sampled as whole chunks (at least 1/8 of them, over the edge-type
strata), whatever the budget: on the 13 real fields of 12-54 chunks the ratio error fell from 7.8% median /
32% max (tiles) to 0.8% / 11% at a similar cost; on 192 chunks (UM sea ice, 87% zeros) 8 chunks missed the
active part (75-96% off) where 16 tiles held 15%."""
MIN_TILE_POINTS = 4096
"""Smallest tile: with 1k-point tiles the boundary effects put ZFP's ratio 70% low on a smooth 3-D field."""
TILE_ALIGN = 4
"""Tile edges are multiples of ZFP's 4-point block (a partial block costs a whole one)."""
MAX_PIECES = 8
"""Pieces of the anchor chunk compressed to calibrate the tiles (kappa): each HDF5 SZ3 call costs ~10-30 ms."""
MAX_EDGE = 2
"""Edge chunks measured whole in the tiles regime."""
N_BOOTSTRAP = 400
FEW = 2
"""Blocks of a lossy codec also decoded (decompression time and errors; each HDF5 SZ3 call costs ~10-30 ms,
so 2, not 4). A lossless codec decodes every block: cheap, and on 2 blocks the first estimate of a process
came out at 0.5-0.6x of the later ones (bitshuffle-lz4), within 1.1x on 8."""


@dataclass(frozen=True)
class BlockMeasurements:
    """Per sampled block: points, compressed bytes, seconds; the anchor chunk and edge chunks apart."""

    regime: str  # "chunks" | "tiles"
    points: np.ndarray
    weight: np.ndarray  # chunks each sampled block stands for (chunks regime; 1 for tiles)
    stratum: np.ndarray  # stratum of each block: the bootstrap resamples within strata
    nbytes: np.ndarray
    comp_s: np.ndarray
    decomp_s: np.ndarray  # the blocks decoded: the first FEW of a lossy codec, all of a lossless one
    kappa: float  # tiles regime: content bytes of the anchor chunk / content bytes of its tile-shaped pieces
    header_tile: float  # bytes of an all-zero tile / chunk: the per-stream floor (headers, empty tables)
    header_chunk: float
    chunk_comp_s: float  # tiles regime: the anchor chunk compressed whole ...
    chunk_decomp_s: float  # ... and decompressed
    pieces_comp_s_per_point: float  # ... and the time per point of its pieces
    edge_points: np.ndarray  # array points (not padding) in each measured edge chunk
    edge_nbytes: np.ndarray  # measured edge chunks (tiles regime)
    edge_comp_s: np.ndarray
    edge_decomp_s: np.ndarray
    repeat_log_sd: float  # spread (log sd) of one timing, from the blocks timed twice
    errors: ErrorStats | None


def codec_calls(codec, target: str, shapes, dtype):
    """(encode, timed decode) of the target library; HDF5's in-memory datasets are created before any timing.

    The timed decode returns (decoded chunk, CPU seconds of decoding, best of two); for HDF5 the seconds are
    the filter's own work (``hdf5_filter.hdf5_decode_seconds``), not the copies the I/O model prices."""
    if target == "hdf5":
        from compression_model.codecs.hdf5_filter import hdf5_decode_seconds, prepare

        kwargs = codec.hdf5_kwargs()
        for shape in set(shapes):
            prepare(kwargs, shape, dtype)
            prepare({}, shape, dtype)
        return codec.hdf5_encode, lambda buf, shape, dtype: hdf5_decode_seconds(buf, shape, dtype, kwargs)
    if target == "zarr":
        def decode(buf, shape, dtype):
            (out, t1), (_, t2) = _timed(codec.decode, buf, shape, dtype), _timed(codec.decode, buf, shape, dtype)
            return out, min(t1, t2)

        return codec.encode, decode
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


def _stratified(n: int, k: int, rng) -> np.ndarray:
    """``k`` of ``range(n)``: one uniform pick in each of k equal strata of the C-ordered index (unbiased;
    mixes all axes, unlike a per-axis grid whose few rows along an axis can all land on the active part)."""
    edges = np.linspace(0, n, k + 1)
    picks = np.floor(edges[:-1] + rng.uniform(0, 1, k) * np.diff(edges)).astype(np.int64)
    return np.unique(np.clip(picks, 0, n - 1))


def _chunk_sample(shape, chunks, k: int, rng):
    """About ``k`` chunk grid indices stratified by edge type, with the chunks each stands for and its stratum.

    A stratum's share of ``k`` follows its points in the array (padding holds no data), at least one chunk
    each: the edge chunks of the Navy winds (54 chunks, 42 on an edge, 6 edge types) put a plain sample of 8
    up to 33% off."""
    grid = chunk_grid(shape, chunks)
    n_chunks = int(np.prod(grid, dtype=np.int64))
    flat = np.arange(n_chunks)
    coords = np.unravel_index(flat, grid)
    # edge type: bit a set when the chunk sticks out of the array along axis a
    kind = sum(((c == g - 1) & (s % ch != 0)).astype(np.int64) << a
               for a, (c, g, s, ch) in enumerate(zip(coords, grid, shape, chunks)))
    kinds, counts = np.unique(kind, return_counts=True)
    valid = np.array([valid_points(np.unravel_index(flat[kind == t][0], grid), shape, chunks) for t in kinds])
    share = counts * valid / float((counts * valid).sum())
    alloc = counts if k >= n_chunks else np.minimum(counts, np.maximum(1, np.round(k * share).astype(np.int64)))
    picks, weight, stratum = [], [], []
    for h, (t, n_h, k_h) in enumerate(zip(kinds, counts, alloc)):
        members = flat[kind == t][_stratified(int(n_h), int(k_h), rng)]
        picks += [tuple(int(c) for c in np.unravel_index(i, grid)) for i in members]
        weight += [n_h / members.size] * members.size
        stratum += [h] * members.size
    return picks, np.array(weight, float), np.array(stratum, int)


def edge_chunks(shape, chunks) -> list[tuple]:
    """Grid indices of the chunks that stick out of the array (C order)."""
    grid = chunk_grid(shape, chunks)
    last = [g - 1 if s % c else None for g, s, c in zip(grid, shape, chunks)]
    return [idx for idx in itertools.product(*map(range, grid)) if any(i == e for i, e in zip(idx, last))]


def interior_chunk(origin, shape, chunks) -> tuple:
    """Grid index of the interior chunk holding ``origin`` (the nearest interior one; any if none is)."""
    grid = chunk_grid(shape, chunks)
    last_full = [g - 1 if s % c == 0 else g - 2 for g, s, c in zip(grid, shape, chunks)]
    return tuple(max(0, min(o // c, lf)) for o, c, lf in zip(origin, chunks, last_full))


def valid_points(index, shape, chunks) -> int:
    """Points of chunk ``index`` inside the array (the rest is padding)."""
    return int(np.prod([min(c, s - i * c) for i, c, s in zip(index, chunks, shape)]))


def _pieces(block: np.ndarray, tile: tuple) -> list[np.ndarray]:
    """``block`` cut into pieces of about the tile shape, cut at multiples of TILE_ALIGN (a ZFP piece with a
    partial 4-block costs a whole block: unaligned cuts put ZFP's kappa, and its ratio, 10% off)."""
    parts = [block]
    for axis, (n, t) in enumerate(zip(block.shape, tile)):
        k = max(1, round(n / t))
        align = TILE_ALIGN if n >= TILE_ALIGN * k else 1
        cuts = sorted({align * round(i * n / k / align) for i in range(1, k)} - {0, n})
        if cuts:
            parts = [p for q in parts for p in np.split(q, cuts, axis=axis)]
    return [np.ascontiguousarray(p) for p in parts]


_HEAP_MIB = 30
_steady = False


def steady_allocator() -> None:
    """Put the C allocator in the state of a process that has worked with large arrays before timing codecs.

    The HDF5 SZ2 filter mallocs ~30 MB per chunk. In a fresh process glibc serves that with a new mmap each
    call (a page fault per page: several times the heap's time per chunk, on the NEMO SST field of
    benchmarks/sampling_estimator.py); once any block of <= 32 MiB that
    was mmapped is freed, glibc raises its mmap threshold to that size and the buffer comes from the heap. Freeing a 30 MiB array, then touching 30 MiB of heap, gives the steady state every timing here
    (estimate and validation truth) is taken in; a fresh process writing the field can be 3-4x slower.
    Once per process (glibc keeps the raised threshold)."""
    global _steady
    if _steady:
        return
    block = np.empty(_HEAP_MIB << 20, np.uint8)  # mmapped; its free raises the threshold
    del block
    block = np.ones(_HEAP_MIB << 20, np.uint8)  # now from the heap: its pages stay mapped for reuse
    del block
    _steady = True


def _timed(fn, *args):
    """(result, CPU seconds): the codecs are single-threaded, so CPU time is the time on an idle core; wall
    time on the shared machine moved 2-3x between identical runs."""
    t0 = time.process_time()
    out = fn(*args)
    return out, time.process_time() - t0


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

    edges, edge_points = [], []
    if budget >= MIN_BLOCKS * chunk_points or n_chunks <= WHOLE_CHUNKS_MAX:
        regime = "chunks"
        k = min(n_chunks, max(MIN_BLOCKS, math.ceil(budget / chunk_points)))
        # a field of <= MIN_BLOCKS chunks is compressed whole: exact, and halving the sample there was measured
        # to cost nearly as much (fixed costs) with ratio errors of 18-50% (docs/compression-sampling.md)
        picks, weight, stratum = _chunk_sample(shape, chunks, k, rng)
        blocks = [_read_chunk(data, i, shape, chunks) for i in picks]
    else:
        regime = "tiles"
        scale = (max(budget / TARGET_TILES, MIN_TILE_POINTS) / chunk_points) ** (1.0 / len(shape))
        tile = tuple(min(c, max(TILE_ALIGN, TILE_ALIGN * round(c * scale / TILE_ALIGN))) if c >= TILE_ALIGN
                     else c for c in chunks)
        # tiles on the grid of tile-sized cells, stratified over the flattened cell index (a per-axis grid
        # sampler put 3 of its few latitude rows on the polar ice of the UM sea-ice field: ratio 47% low)
        cells = tuple(max(1, s // t) for s, t in zip(shape, tile))
        n_cells = int(np.prod(cells, dtype=np.int64))
        k = min(n_cells, max(MIN_BLOCKS, math.ceil(budget / int(np.prod(tile, dtype=np.int64)))))
        origins = [tuple(int(i) * t for i, t in zip(np.unravel_index(c, cells), tile))
                   for c in _stratified(n_cells, k, rng)]
        blocks = [np.ascontiguousarray(np.asarray(data[tuple(slice(o, o + t) for o, t in zip(org, tile))]))
                  for org in origins]
        weight, stratum = np.ones(len(blocks)), np.zeros(len(blocks), int)
        all_edges = edge_chunks(shape, chunks)
        if all_edges:
            picks = _stratified(len(all_edges), min(MAX_EDGE, len(all_edges)), rng)
            edges = [_read_chunk(data, all_edges[i], shape, chunks) for i in picks]
            edge_points = [valid_points(all_edges[i], shape, chunks) for i in picks]
    encode, decode = codec_calls(codec, target, [b.shape for b in blocks + edges], blocks[0].dtype)

    def run(block_list, n_decoded, passes=2):
        """Compress every block (time: best of ``passes``); decode the first ``n_decoded`` (decompression time
        and errors). Best of two where a block's own time is scaled up: one ms-scale call here varies by
        20-30% between passes (interrupts, caches), and single passes put the estimates 8% above the median
        of three whole-field writes. Tiles give relative speeds only (the level is the anchor's, best of two)."""
        sizes, comp, decomp, pairs = [], [], [], []
        for i, block in enumerate(block_list):
            buf, t = _timed(encode, block)
            sizes.append(len(buf))
            times = [t] + [_timed(encode, block)[1] for _ in range(passes - 1)]
            comp.append(min(times))
            if passes > 1:
                repeat_logs.append(math.log(max(times[0], 1e-9) / max(times[1], 1e-9)))
            if i < n_decoded:
                out, t_dec = decode(buf, block.shape, block.dtype)
                decomp.append(t_dec)
                pairs.append((block, out))
        return np.array(sizes, float), np.array(comp), np.array(decomp), pairs

    # Decoding serves the time ratio and the errors, which vary little between blocks: a few suffice,
    # and the estimate stays within its cost budget.
    steady_allocator()
    repeat_logs = []  # log(first / second timing) of each block timed twice
    # the first calls of a codec in a process load and initialise it , and a first decode
    # touches fresh buffers (about half the later speed: docs/compression-validation.md): untimed
    decode(encode(blocks[0]), blocks[0].shape, blocks[0].dtype)
    nbytes, comp_s, decomp_s, pairs = run(blocks, FEW if codec.lossy else len(blocks), 1 if regime == "tiles" else 2)
    e_nbytes, e_comp, e_decomp, e_pairs = run(edges, len(edges))
    kappa, chunk_comp_s, chunk_decomp_s, pieces_s, h_tile, h_chunk = 1.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if regime == "tiles":
        points = np.array([b.size for b in blocks], float)
        # the anchor holds the bytes-weighted median tile: where the bytes are (in a sparse field the plain
        # median tile is empty, and an empty chunk calibrates nothing: sea-ice velocity came out 47% low)
        order = np.argsort(nbytes / points)
        median_tile = int(order[np.searchsorted(np.cumsum(nbytes[order]), 0.5 * nbytes.sum())])
        index = interior_chunk(origins[median_tile], shape, chunks)
        anchor = _read_chunk(data, index, shape, chunks)
        pieces = _pieces(anchor, blocks[0].shape)
        # a spread-out subset of the pieces: a 64^3 anchor cut into ~30 pieces was half of all codec calls
        pieces = [pieces[i] for i in np.unique(np.linspace(0, len(pieces) - 1, MAX_PIECES).round().astype(int))]
        pieces_points = sum(p.size for p in pieces)
        encode, decode = codec_calls(codec, target, [anchor.shape] + [p.shape for p in pieces], anchor.dtype)
        # best of two: on a shared machine one call can take 10x longer than the same call on the same chunk
        (buf, t1), (_, t2) = _timed(encode, anchor), _timed(encode, anchor)
        chunk_comp_s = min(t1, t2)
        repeat_logs.append(math.log(max(t1, 1e-9) / max(t2, 1e-9)))
        chunk_decomp_s = decode(buf, anchor.shape, anchor.dtype)[1]
        piece_runs = [_timed(encode, p) for p in pieces]
        pieces_s = sum(t for _, t in piece_runs) / pieces_points
        # the per-stream floor: at ratios in the hundreds a tile is mostly header (trinidad DEM, SZ3 1e-2:
        # 180 of 190 bytes), so only the bytes above the floor scale with the points
        h_tile = float(len(encode(np.zeros(blocks[0].shape, anchor.dtype))))
        h_chunk = float(len(encode(np.zeros(anchor.shape, anchor.dtype))))
        content = sum(max(len(b) - h_tile, 0.0) for b, _ in piece_runs) * anchor.size / pieces_points
        kappa = max(len(buf) - h_chunk, 0.0) / content if content > 0 else 1.0
    errors = None
    if codec.lossy:
        original = np.concatenate([b.ravel() for b, _ in pairs + e_pairs])
        decoded = np.concatenate([np.asarray(o).ravel() for _, o in pairs + e_pairs])
        errors = ErrorStats.measure(original, decoded, data_range if data_range is not None else 0.0)
    return BlockMeasurements(
        regime, np.array([b.size for b in blocks], float), weight, stratum, nbytes, comp_s, decomp_s, kappa,
        h_tile, h_chunk, chunk_comp_s, chunk_decomp_s, pieces_s, np.array(edge_points, float), e_nbytes, e_comp,
        e_decomp, math.sqrt(np.mean(np.square(repeat_logs)) / 2) if repeat_logs else 0.0, errors)


def budget_notes(m: BlockMeasurements, shape, chunks, sample_fraction: float) -> list[str]:
    """Say so when the requested sample fraction could not be kept (the field is too small for it)."""
    n_total = int(np.prod(shape, dtype=np.int64))
    wanted = sample_fraction * n_total
    if wanted >= MIN_BLOCKS * MIN_TILE_POINTS:
        return []
    anchor = int(np.prod(chunks, dtype=np.int64)) if m.regime == "tiles" else 0
    done = m.points.sum() + m.edge_points.sum() + anchor
    return [f"field too small for a {100 * sample_fraction:g}% sample ({wanted:.0f} points < the "
            f"{MIN_BLOCKS * MIN_TILE_POINTS}-point minimum): compressed {100 * min(done / n_total, 1.0):.0f}% "
            f"of the field ({m.regime}), so the 5% cost budget cannot hold"]


def scale_up(m: BlockMeasurements, shape, chunks, idx: np.ndarray | None = None, jitter=(1.0, 1.0)):
    """Whole-field (stored bytes, compress s, decompress s); ``idx`` (B, k) resamples blocks and ``jitter``
    (factors on the blocks' bytes and seconds, (B, k) each) perturbs them (bootstrap)."""
    if idx is None:
        idx = np.arange(m.points.size)[None, :]
    nbytes, comp_s = m.nbytes[idx] * jitter[0], m.comp_s[idx] * jitter[1]
    n_total = int(np.prod(shape, dtype=np.int64))
    n_chunks = int(np.prod(chunk_grid(shape, chunks), dtype=np.int64))
    if m.regime == "chunks":
        # decompression: the decoded chunks (FEW of a lossy codec, all of a lossless one) and their median
        # decompress/compress time ratio
        dec_per_comp = float(np.median(m.decomp_s / m.comp_s[: m.decomp_s.size]))
        stored, comp = ((m.weight[idx] * v).sum(axis=1) for v in (nbytes, comp_s))
        return stored, comp, comp * dec_per_comp

    n = m.points[idx].sum(axis=1)
    chunk_points = int(np.prod(chunks, dtype=np.int64))
    edges = edge_chunks(shape, chunks)
    n_edge = len(edges)
    edge_valid = sum(valid_points(e, shape, chunks) for e in edges)
    n_in, pts_in = n_chunks - n_edge, n_total - edge_valid
    # calibrated content bytes per point of a whole chunk (above the per-stream floor)
    bpp = m.kappa * np.maximum(nbytes - m.header_tile, 0.0).sum(axis=1) / n
    # time per interior chunk: the anchor's, scaled by the tiles' speed relative to the anchor's pieces
    spp = comp_s.sum(axis=1) / n
    t_chunk = m.chunk_comp_s * spp / m.pieces_comp_s_per_point
    stored = m.header_chunk * n_in + bpp * pts_in
    comp = t_chunk * n_in
    decomp = comp * m.chunk_decomp_s / m.chunk_comp_s
    if n_edge:
        # edge chunks: the interior model on their array points plus a per-padding-point cost fitted on the
        # measured edge chunks (padding is cheap for a lossless codec, costly for a predictor at a cliff)
        pad_measured = (chunk_points - m.edge_points).sum()
        rest = m.edge_nbytes.sum() - m.header_chunk * m.edge_points.size - bpp * m.edge_points.sum()
        # bounded: padding is neither free-er than nothing nor dearer than data (an unbounded fit on two
        # chunks put a 4-D field with 120 of 144 chunks on the edge 112% off)
        pad = np.clip(rest / pad_measured, 0.0, bpp) if pad_measured else 0.0
        stored = stored + m.header_chunk * n_edge + bpp * edge_valid + pad * (n_edge * chunk_points - edge_valid)
        comp = comp + n_edge * m.edge_comp_s.mean()
        decomp = decomp + n_edge * m.edge_decomp_s.mean()
    return stored, comp, decomp


def anchor_log_sd(m: BlockMeasurements) -> float:
    """Spread (log sd) of one timing: robust spread of the tiles' log time per point (0 for chunks)."""
    if m.regime == "chunks":
        return 0.0
    log_spp = np.log(np.maximum(m.comp_s, 1e-9) / m.points)
    return float(1.4826 * np.median(np.abs(log_spp - np.median(log_spp))))


def bootstrap(m: BlockMeasurements, shape, chunks, seed: int = 0):
    """Bootstrap replicates of ``scale_up``: blocks resampled within their strata; a stratum measured by a
    single chunk of several has its bytes and seconds perturbed by the relative within-stratum spread pooled
    over the other strata (resampling one block has no spread: the intervals of the 12-chunk GCM fields were
    points that missed a 0.3% error); the anchor and edge chunks are kept as measured."""
    rng = np.random.default_rng(seed)
    idx = np.tile(np.arange(m.points.size), (N_BOOTSTRAP, 1))
    single = []
    for h in np.unique(m.stratum):
        members = np.flatnonzero(m.stratum == h)
        if m.regime == "chunks" and np.all(m.weight[members] == 1):
            continue  # every chunk of the stratum measured: nothing to resample
        if members.size == 1:
            single.append(members[0])
        else:
            idx[:, members] = rng.choice(members, size=(N_BOOTSTRAP, members.size))
    jitter = [np.ones(idx.shape), np.ones(idx.shape)]
    if single:
        for j, values in enumerate((m.nbytes, m.comp_s)):
            spread = rng.choice(_pooled_spread(m, values), size=(N_BOOTSTRAP, len(single)))
            jitter[j][:, single] = np.maximum(1.0 + spread, 0.0)
    return scale_up(m, shape, chunks, idx, jitter)


def _pooled_spread(m: BlockMeasurements, values: np.ndarray) -> np.ndarray:
    """Relative deviations of blocks from their stratum mean, over strata of >= 2 blocks (variance-corrected by
    n/(n-1)); over all blocks when no stratum has two."""
    groups = [np.flatnonzero(m.stratum == h) for h in np.unique(m.stratum)]
    groups = [g for g in groups if g.size > 1] or [np.arange(values.size)]
    return np.concatenate([(values[g] / max(values[g].mean(), 1e-12) - 1.0) * math.sqrt(g.size / (g.size - 1))
                           for g in groups])
