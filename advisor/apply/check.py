"""Comparing a block written with the block read: bitwise when lossless, within the bound when lossy,
NaN and fill-value positions equal in both cases."""
from __future__ import annotations

import numpy as np

from .targets import ApplyError

PIECE = 1 << 22
"""Elements compared at a time: the comparison's temporaries stay small beside the block."""


def _pieces(a: np.ndarray):
    flat = a.reshape(-1)
    for i in range(0, flat.size, PIECE):
        yield i, flat[i:i + PIECE]


def compare_block(expected: np.ndarray, got: np.ndarray, *, bound: float | None = None, fill=None,
                  where: str = "") -> float:
    """The largest absolute error of ``got`` against ``expected`` (0 when equal); ApplyError when a value is
    off: any bit for a lossless block; beyond ``bound``, or a NaN or fill value moved, for a lossy one."""
    expected = np.ascontiguousarray(expected)
    got = np.ascontiguousarray(got)
    if expected.shape != got.shape:
        raise ApplyError(f"{where}: read back {got.shape}, wrote {expected.shape}")
    if expected.dtype.kind == "O" or expected.dtype.hasobject:
        if not np.array_equal(expected, got):
            raise ApplyError(f"{where}: the values read back differ from the source")
        return 0.0
    if bound is None or expected.dtype.kind not in "fc":
        e8 = expected.view(np.uint8) if expected.ndim else expected.reshape(1).view(np.uint8)
        g8 = got.view(np.uint8) if got.ndim else got.reshape(1).view(np.uint8)
        for i, piece in _pieces(e8):
            if not np.array_equal(piece, g8.reshape(-1)[i:i + piece.size]):
                raise ApplyError(f"{where}: the bytes read back differ from the source (lossless copy)")
        return 0.0
    worst = 0.0
    gflat = got.reshape(-1)
    for i, e in _pieces(expected):
        g = gflat[i:i + e.size]
        en, gn = np.isnan(e), np.isnan(g)
        if not np.array_equal(en, gn):
            raise ApplyError(f"{where}: NaN positions differ after lossy compression")
        if fill is not None and np.isfinite(fill):
            ef = e == fill
            if not np.array_equal(g[ef], e[ef]):
                raise ApplyError(f"{where}: fill values ({fill}) changed by lossy compression")
        ok = ~en
        if ok.any():
            diff = np.abs(g[ok].astype(np.float64) - e[ok].astype(np.float64))
            m = float(diff.max())
            # the codec works in float64; storing float32 may add half an ulp of the value
            slack = float(np.spacing(np.abs(e[ok]).max().astype(e.dtype))) if e.dtype.kind == "f" else 0.0
            if m > bound + slack:
                raise ApplyError(f"{where}: error {m:.3g} exceeds the bound {bound:.3g}")
            worst = max(worst, m)
    return worst
