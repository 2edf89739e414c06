"""Gray-box size model of prediction-based compressors (SZ3, SZ2) on sampled blocks (zPerf stages 2-3).

SZ3's pipeline, as run by its HDF5 filter on each chunk independently:
  predictor (ALGO_INTERP_LORENZO, the default: per call, SZ3 compresses a sample of the chunk with Lorenzo
  and with interpolation and keeps interpolation unless Lorenzo wins with both ratios below 80;
  :func:`sz3_predictor` applies that rule to the modeled tile sizes) ->
  linear-scaling quantizer (radius 32768, bin width 2e; out-of-range points stored raw: "unpredictable") ->
  Huffman coding of the quantization codes (canonical tree stored with the chunk) -> zstd over the whole.

The model runs the predictor and quantizer on each sampled tile *with* reconstruction feedback (vectorized
per interpolation level and axis, so every prediction uses reconstructed values as SZ3 does), builds the
quantization-code histogram, the Huffman code lengths from that histogram only (heap over distinct codes),
and counts: eta (share of predictable points), Huffman bits, tree bytes, unpredictable bytes. The zstd pass
is applied for real to the modeled Huffman stream of the tile (it is cheap: a few bits per sampled point),
then scaled by a calibrated factor (profile) that absorbs what the stream model misses.
SZ2 (hdf5plugin "sz") uses blockwise Lorenzo/regression; it is modeled with the Lorenzo predictor, whose
reconstruction feedback is approximated by uniform noise of width 2e on the neighbours (the quantization
error of already-coded points).
"""
from __future__ import annotations

from dataclasses import dataclass
import heapq

import numpy as np

#: SZ3 LinearQuantizer radius (quantbinCnt / 2): |code| >= RADIUS is unpredictable.
RADIUS = 32768
#: SZ3 interpolates inside blocks of INTERP_BLOCK * stride points per dimension (InterpolationDecomposition).
INTERP_BLOCK = 32


def _quantize(orig, pred, eb):
    """LinearQuantizer.quantize_and_overwrite, vectorized: returns (codes, reconstructed).

    code = sign(d) * floor((|d|/eb + 1) / 2) shifted by RADIUS, 0 for unpredictable (value kept exact).
    """
    d = orig - pred
    half = np.floor((np.abs(d) / eb + 1.0) / 2.0)
    ok = half < RADIUS
    q = np.where(d < 0, -half, half)
    rec = pred + 2.0 * eb * q
    ok &= np.abs(rec - orig) <= eb
    ok &= np.isfinite(rec)
    codes = np.where(ok, q + RADIUS, 0).astype(np.int64)
    return codes, np.where(ok, rec, orig)


def _axis_pred(k, n_targets, kind):
    """Predictions for the n_targets midpoints between known points k (axis 0), SZ3's 1-D interpolation.

    Interior: cubic (-1, 9, 9, -1)/16 inside each INTERP_BLOCK block, quadratic at block edges
    (interp_quad_1 / interp_quad_2), linear extrapolation for a trailing point with no right neighbour.
    """
    nk = k.shape[0]
    pred = np.empty((n_targets,) + k.shape[1:], dtype=np.float64)
    m = min(n_targets, nk - 1)  # midpoints with both neighbours
    if m > 0:
        a, b = k[:m], k[1 : m + 1]
        pred[:m] = 0.5 * (a + b)
        if kind == "cubic" and nk >= 3:
            j = np.arange(m)
            pos = j % (INTERP_BLOCK // 2)
            cub = (pos > 0) & (pos < INTERP_BLOCK // 2 - 1) & (j >= 1) & (j + 2 < nk)
            ic = np.nonzero(cub)[0]
            if ic.size:
                pred[ic] = (-k[ic - 1] + 9 * k[ic] + 9 * k[ic + 1] - k[ic + 2]) / 16.0
            q1 = np.nonzero(~cub & (j + 2 < nk))[0]  # left block edge: interp_quad_1(a, b, c)
            q1 = q1[(q1 % (INTERP_BLOCK // 2)) == 0] if q1.size else q1
            if q1.size:
                pred[q1] = (3 * k[q1] + 6 * k[q1 + 1] - k[q1 + 2]) / 8.0
            q2 = np.nonzero(~cub & (j >= 1))[0]  # right block edge / array end: interp_quad_2
            q2 = q2[~np.isin(q2, q1)] if q2.size else q2
            if q2.size:
                pred[q2] = (-k[q2 - 1] + 6 * k[q2] + 3 * k[q2 + 1]) / 8.0
    if n_targets > m:  # trailing target beyond the last known point
        pred[m:] = (-0.5 * k[nk - 2] + 1.5 * k[nk - 1]) if nk >= 2 else k[nk - 1]
    return pred


def interp_codes(tiles: np.ndarray, eb: float, kind: str = "cubic") -> np.ndarray:
    """Quantization codes of SZ3's interpolation predictor with reconstruction feedback, per tile.

    ``tiles``: (B, *tile_shape), B tiles compressed independently (vectorized over B). Returns (B, n).
    Order: anchor x[0..0] (predicted by 0), then levels from coarse to fine, axes in order; at stride s
    along axis a the targets sit at odd multiples of s on a, multiples of s on earlier axes, of 2s on later.
    """
    x = np.array(tiles, dtype=np.float64)
    B = x.shape[0]
    x = x.reshape([B] + ([s for s in x.shape[1:] if s > 1] or [1]))  # SZ3 drops unit dimensions
    nd = x.ndim - 1
    rec = x.copy()
    anchor = (slice(None),) + (0,) * nd
    c, r = _quantize(x[anchor], np.zeros(B), eb)
    rec[anchor] = r
    out = [c.reshape(B, 1)]
    levels = int(np.ceil(np.log2(max(max(x.shape[1:]), 2))))
    for lev in range(levels, 0, -1):
        s = 1 << (lev - 1)
        for ax in range(1, nd + 1):
            base = [slice(None)] + [slice(0, None, s) if a < ax else slice(0, None, 2 * s)
                                    for a in range(1, nd + 1)]
            kn = tuple(base)
            base[ax] = slice(s, None, 2 * s)
            tg = tuple(base)
            tview = x[tg]
            n_t = tview.shape[ax]
            if n_t == 0:
                continue
            known = np.moveaxis(rec[kn], ax, 0)
            pred = np.moveaxis(_axis_pred(known, n_t, kind), 0, ax)
            codes, r = _quantize(tview, pred, eb)
            rec[tg] = r
            out.append(codes.reshape(B, -1))
    return np.concatenate(out, axis=1)


def lorenzo_codes(tiles: np.ndarray, eb: float, rng=None) -> np.ndarray:
    """Codes of the first-order Lorenzo predictor per tile ((B, *tile) -> (B, n)).

    Reconstruction feedback is approximated by U(-e, e) noise on the neighbours.
    """
    rng = np.random.default_rng(rng)
    x = np.array(tiles, dtype=np.float64)
    B = x.shape[0]
    x = x.reshape([B] + ([s for s in x.shape[1:] if s > 1] or [1]))
    noise = rng.uniform(-eb, eb, size=x.shape)
    err = np.pad(x + noise, [(0, 0)] + [(1, 0)] * (x.ndim - 1))  # out-of-tile neighbours are 0
    for ax in range(1, x.ndim):
        err = np.diff(err, axis=ax)
    codes, _ = _quantize(x, x + noise - err, eb)  # pred = noisy x - Lorenzo error of the noisy data
    return codes.reshape(B, -1)


def huffman_lengths(counts: np.ndarray) -> np.ndarray:
    """Huffman code length of each symbol from its count (heap over the histogram, not the data)."""
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.size
    if n == 1:
        return np.ones(1, dtype=np.int64)
    heap = [(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    nxt = n
    while len(heap) > 1:
        c1, a = heapq.heappop(heap)
        c2, b = heapq.heappop(heap)
        parent[a] = parent[b] = nxt
        heapq.heappush(heap, (c1 + c2, nxt))
        nxt += 1
    depth = np.zeros(2 * n - 1, dtype=np.int64)
    for node in range(2 * n - 3, -1, -1):  # parents have larger ids: fill depths top-down
        depth[node] = depth[parent[node]] + 1
    return depth[:n]


def huffman_stream(codes: np.ndarray, lengths: np.ndarray, symbols: np.ndarray) -> bytes:
    """Canonical-Huffman bit stream of ``codes`` (to feed the real lossless pass)."""
    order = np.lexsort((symbols, lengths))
    ls = lengths[order]
    canon = np.zeros_like(ls)
    # canonical code: code[i] = (code[i-1] + 1) << (len[i] - len[i-1])
    code = 0
    for i in range(1, ls.size):
        code = (code + 1) << int(ls[i] - ls[i - 1])
        canon[i] = code
    cw = np.empty_like(canon)
    cw[order] = canon
    idx = np.searchsorted(symbols, codes)
    L = lengths[idx]
    V = cw[idx]
    total = int(L.sum())
    if total == 0:
        return b""
    starts = np.repeat(np.cumsum(L) - L, L)
    pos = np.arange(total) - starts
    bits = (np.repeat(V, L) >> (np.repeat(L, L) - 1 - pos)) & 1
    return np.packbits(bits.astype(np.uint8)).tobytes()


@dataclass(frozen=True)
class TileSize:
    """Counted quantities of one independently compressed tile (an HDF5/Zarr chunk or a piece of one)."""

    n_points: int
    n_unpred: int
    n_distinct: int  # distinct quantization codes = Huffman tree leaves
    huffman_bytes: float  # encoded quantization codes
    stream_zstd_bytes: float  # the Huffman stream after the real zstd pass, frame overhead removed
    itemsize: int

    @property
    def eta(self) -> float:
        """Share of predictable points (zPerf's eta)."""
        return 1.0 - self.n_unpred / max(self.n_points, 1)

    @property
    def unpred_bytes(self) -> float:
        return float(self.n_unpred * self.itemsize)


#: SZ3 keeps interpolation unless Lorenzo's sample ratio is higher and both are below this (SZInterp.hpp)
SZ3_LORENZO_MAX_RATIO = 80.0


def modeled_bytes(t: TileSize) -> float:
    """Calibration-free size of a tile for comparing predictors (codes after zstd, raw values, ~4 B a leaf)."""
    return t.stream_zstd_bytes + t.unpred_bytes + 4.0 * t.n_distinct


def sz3_predictor(interp: TileSize, lorenzo: TileSize) -> str:
    """SZ3's choice for one chunk: "lorenzo" when Lorenzo gives the higher ratio and both ratios are < 80."""
    raw = interp.n_points * interp.itemsize
    r_i, r_l = raw / max(modeled_bytes(interp), 1.0), raw / max(modeled_bytes(lorenzo), 1.0)
    return "lorenzo" if r_l > r_i and r_l < SZ3_LORENZO_MAX_RATIO and r_i < SZ3_LORENZO_MAX_RATIO else "interp"


def tile_sizes(tiles: np.ndarray, eb: float, predictor: str, itemsize: int, zstd_level: int = 3,
               rng=None) -> list:
    """Model B same-shape tiles ((B, *tile)): codes -> histogram -> Huffman lengths -> stream -> real zstd.

    Tree and unpredictable bytes (barely compressible) are left as counts; :mod:`graybox` weighs them
    with calibrated per-code and per-value costs.
    """
    from numcodecs import Zstd  # numcodecs is a light, h5py/zarr-free dependency

    zstd = Zstd(level=zstd_level)
    frame = len(zstd.encode(b""))
    all_codes = interp_codes(tiles, eb) if predictor == "interp" else lorenzo_codes(tiles, eb, rng)
    out = []
    for codes in all_codes:
        symbols, counts = np.unique(codes, return_counts=True)
        lengths = huffman_lengths(counts)
        n_unpred = int(counts[0]) if symbols[0] == 0 else 0
        huff = float((lengths * counts).sum()) / 8.0
        stream = huffman_stream(codes, lengths, symbols)
        z = max(len(zstd.encode(stream)) - frame, 0) if stream else 0
        out.append(TileSize(int(codes.size), n_unpred, int(symbols.size), huff, float(z), itemsize))
    return out
