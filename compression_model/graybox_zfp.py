"""Gray-box size model of ZFP fixed-accuracy mode on sampled 4^d blocks (zPerf's transform branch).

Per block, as zfp 1.0 does (src/template/encode.c): common exponent emax (frexp of the block max);
block-floating-point integers x * 2^(intprec-2-emax); the exact integer decorrelating lifting transform
along each axis; reorder by sequency and convert to negabinary; then the bit planes kept are
maxprec = min(intprec, max(0, emax - minexp + 2(d+1))) with minexp = exponent of the tolerance - 1, and each
plane costs the n already-significant bits verbatim plus the group-test (unary run-length) bits for the
rest. The bit counts are computed exactly on the sampled blocks in numpy, vectorized over blocks.
"""
from __future__ import annotations

import itertools

import numpy as np

EBITS = {4: 8, 8: 11}  # exponent bits per block header (float, double)
EBIAS = {4: 127, 8: 1023}


def _perm(nd: int) -> np.ndarray:
    """Sequency order of the 4^d coefficients (zfp's perm_d tables: by index sum, then sum of squares)."""
    idx = list(itertools.product(range(4), repeat=nd))  # C order: last axis fastest = zfp's x
    key = sorted(range(len(idx)), key=lambda n: (sum(idx[n]), sum(i * i for i in idx[n])))
    return np.array(key)


def _fwd_lift(v: np.ndarray, axis: int) -> np.ndarray:
    """zfp's fwd_lift on 4 values along ``axis`` (integer, arithmetic shifts)."""
    x, y, z, w = (np.take(v, i, axis=axis) for i in range(4))
    x = x + w; x = x >> 1; w = w - x
    z = z + y; z = z >> 1; y = y - z
    x = x + z; x = x >> 1; z = z - x
    w = w + y; w = w >> 1; y = y - w
    w = w + (y >> 1); y = y - (w >> 1)
    return np.stack([x, y, z, w], axis=axis)


def to_blocks(tile: np.ndarray, batch: bool = False) -> np.ndarray:
    """4^d blocks of a tile, edge blocks padded by edge copy (zfp pads partial blocks).

    Returns (nblocks, 4, ..., 4); with ``batch`` the first axis of ``tile`` indexes independent tiles
    and the result is (ntiles, nblocks, 4, ..., 4).
    """
    x = np.asarray(tile, dtype=np.float64)
    if not batch:
        x = x[None]
    B = x.shape[0]
    x = x.reshape([B] + ([s for s in x.shape[1:] if s > 1] or [1]))
    pad = [(0, 0)] + [(0, (-s) % 4) for s in x.shape[1:]]
    if any(p[1] for p in pad):
        x = np.pad(x, pad, mode="edge")
    nd = x.ndim - 1
    shp = [B]
    for s in x.shape[1:]:
        shp += [s // 4, 4]
    xb = x.reshape(shp).transpose([0] + list(range(1, 2 * nd, 2)) + list(range(2, 2 * nd + 1, 2)))
    xb = xb.reshape((B, -1) + (4,) * nd)
    return xb if batch else xb[0]


def block_bits(blocks: np.ndarray, tolerance: float, itemsize: int = 4) -> np.ndarray:
    """Exact zfp fixed-accuracy bits of each 4^d block (header + bit planes)."""
    nb = blocks.shape[0]
    nd = blocks.ndim - 1
    size = 4 ** nd
    intprec = 8 * itemsize
    flat = blocks.reshape(nb, size)
    mx = np.abs(flat).max(axis=1)
    emax = np.where(mx > 0, np.frexp(mx)[1], -EBIAS[itemsize])
    minexp = int(np.frexp(tolerance)[1]) - 1
    maxprec = np.minimum(intprec, np.maximum(0, emax - minexp + 2 * (nd + 1)))
    bits = np.ones(nb, dtype=np.int64)  # the "block is nonzero" bit
    coded = maxprec > 0
    if not coded.any():
        return bits
    bits[coded] += EBITS[itemsize]
    fb = flat[coded]
    e = emax[coded]
    q = np.trunc(fb * np.ldexp(1.0, (intprec - 2) - e)[:, None]).astype(np.int64)
    q = q.reshape((-1,) + (4,) * nd)
    for ax in range(nd, 0, -1):  # x (fastest) first
        q = _fwd_lift(q, ax)
    q = q.reshape(-1, size)[:, _perm(nd)]
    if intprec == 32:
        u = ((q + 0xAAAAAAAA) ^ 0xAAAAAAAA) & 0xFFFFFFFF  # negabinary, 32-bit wraparound
        u = u.astype(np.uint64)
    else:
        nb_mask = np.uint64(0xAAAAAAAAAAAAAAAA)
        u = (q.astype(np.uint64) + nb_mask) ^ nb_mask
    kmin = intprec - maxprec[coded]
    n = np.zeros(u.shape[0], dtype=np.int64)
    pos = np.arange(size)
    total = np.zeros(u.shape[0], dtype=np.int64)
    for k in range(intprec - 1, -1, -1):
        active = k >= kmin
        if not active.any():
            break
        plane = ((u >> np.uint64(k)) & np.uint64(1)).astype(bool)
        rest = plane & (pos[None, :] >= n[:, None])
        m = rest.sum(axis=1)
        last = np.where(m > 0, size - 1 - np.argmax(rest[:, ::-1], axis=1), -1)
        cost = np.where(m == 0, (n < size).astype(np.int64),
                        m + (last - n + 1) - (last == size - 1) + (last + 1 < size))
        total += np.where(active, n + cost, 0)
        n = np.where(active & (m > 0), last + 1, n)
    bits[coded] += total
    return bits


def tile_bits(tile: np.ndarray, tolerance: float, itemsize: int = 4) -> int:
    """Bits of one independently compressed tile, rounded up to zfp's 64-bit stream words."""
    b = int(block_bits(to_blocks(tile), tolerance, itemsize).sum())
    return -(-b // 64) * 64
