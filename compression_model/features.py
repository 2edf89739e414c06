"""Data features from a block sample (zPerf stage 1).

Everything here is computed on the sampled blocks only, blockwise (a predictor never looks across a
block edge, as a compressor never looks across a chunk edge):

- value range, NaN/Inf/fill shares (fill: explicit, or a detected isolated extreme value);
- adjacent differences and Lorenzo prediction errors (1-D/2-D/3-D) on the original values;
- SZ3's level-wise interpolation (linear/cubic) prediction errors on the original values;
- ZFP's per-4^d-block common exponents.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: |value| at or above which a float is a fill value (netCDF default fill 9.97e36, ferret -1e34).
HUGE_FILL = 1e30


@dataclass(frozen=True)
class Features:
    """Summary features of a sample; shares are of all sampled points."""

    n_total: int
    n_sampled: int
    ndim: int
    itemsize: int
    value_min: float  # over valid (finite, non-fill) points
    value_max: float
    nan_share: float
    inf_share: float
    fill_share: float
    fill_value: float | None
    strategy: str
    skew: float
    lorenzo_mad: float  # median |Lorenzo error| over valid interior points
    interp_mad: float  # median |cubic interpolation error|
    diff_mad: float  # median |adjacent difference| along the fastest axis

    @property
    def value_range(self) -> float:
        return self.value_max - self.value_min

    @property
    def nonfinite_share(self) -> float:
        return self.nan_share + self.inf_share

    def get_config(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_config(cls, config: dict) -> "Features":
        return cls(**config)


def detect_fill(values: np.ndarray) -> float | None:
    """A fill value among finite ``values``: a huge magnitude, or a frequent isolated extreme value.

    Isolated: the modal value is the min or max, holds >= 1% of points, and lies farther from the
    rest of the data than the rest's own range (land masks, -999 flags).
    """
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    if v.dtype.kind != "f" or float(np.finfo(v.dtype).max) >= HUGE_FILL:  # float16 cannot hold one (and warns)
        huge = np.abs(v) >= HUGE_FILL
        if huge.any():
            return float(v[huge][0])
    uniq, counts = np.unique(v, return_counts=True)
    if uniq.size < 3:
        return None
    for idx, other in ((0, uniq[1:]), (uniq.size - 1, uniq[:-1])):
        if counts[idx] >= 0.01 * v.size:
            rest = float(other.max() - other.min())
            gap = float(min(abs(uniq[idx] - other.min()), abs(uniq[idx] - other.max())))
            if gap > max(rest, 0):
                return float(uniq[idx])
    return None


def valid_mask(block: np.ndarray, fill_value=None) -> np.ndarray:
    """Points that are finite and not the fill value."""
    m = np.isfinite(block)
    if fill_value is not None:
        m &= block != fill_value
    return m


def adjacent_differences(block: np.ndarray, axis: int = -1) -> np.ndarray:
    """x[i+1] - x[i] along ``axis`` (float64)."""
    return np.diff(np.asarray(block, dtype=np.float64), axis=axis)


def lorenzo_errors(block: np.ndarray) -> np.ndarray:
    """First-order d-D Lorenzo prediction error on interior points (Ibarria et al.; SZ's Lorenzo).

    pred(x) = sum over the 2^d - 1 lower neighbours n of (-1)^(|n|+1) x[n]; error = x - pred. It is the
    d-fold mixed first difference, computed as d successive np.diff calls. Shape: each dim minus 1.
    """
    e = np.asarray(block, dtype=np.float64)
    for ax in range(e.ndim):
        e = np.diff(e, axis=ax)
    return e


def lorenzo_valid(mask: np.ndarray) -> np.ndarray:
    """Interior points whose whole Lorenzo stencil (the point and its 2^d - 1 lower neighbours) is valid."""
    v = np.asarray(mask, dtype=bool)
    for ax in range(v.ndim):
        lo = tuple(slice(None, -1) if a == ax else slice(None) for a in range(v.ndim))
        hi = tuple(slice(1, None) if a == ax else slice(None) for a in range(v.ndim))
        v = v[lo] & v[hi]
    return v


def _interp_along(known: np.ndarray, axis: int, kind: str) -> np.ndarray:
    """Predict the midpoints between consecutive entries of ``known`` along ``axis``.

    Linear: (a+b)/2. Cubic (SZ3's 4-point, weights -1/16, 9/16, 9/16, -1/16) where both outer neighbours
    exist, linear at the edges; the last odd point beyond the final known value is extrapolated by
    copying, as SZ3 does at a boundary. Returns predictions for len(known)-1 midpoints.
    """
    k = np.moveaxis(known, axis, 0)
    a, b = k[:-1], k[1:]
    pred = 0.5 * (a + b)
    if kind == "cubic" and k.shape[0] >= 4:
        pred[1:-1] = (-k[:-3] + 9 * k[1:-2] + 9 * k[2:-1] - k[3:]) / 16.0
    return np.moveaxis(pred, 0, axis)


def interp_errors(block: np.ndarray, kind: str = "cubic") -> np.ndarray:
    """SZ3 level-wise interpolation prediction errors on original values (no quantization feedback).

    From the coarsest stride s = 2^L down to s = 2, along each axis a in turn, the points whose index
    on axis a is an odd multiple of s/2 (on earlier axes a multiple of s/2, on later axes a multiple
    of s) are predicted from their neighbours at distance s/2 on axis a. Returns all errors, flattened
    (the anchor point x[0, ..., 0] is stored, not predicted).
    """
    x = np.asarray(block, dtype=np.float64)
    nd = x.ndim
    levels = int(np.ceil(np.log2(max(max(x.shape), 2))))
    out = []
    for lev in range(levels, 0, -1):
        s = 2 ** lev
        h = s // 2
        for ax in range(nd):
            # Lattice already known on this axis (stride s) and target points (odd multiples of h).
            sl_known = []
            for a2 in range(nd):
                step = h if a2 < ax else s
                sl_known.append(slice(0, None, step) if a2 != ax else slice(0, None, s))
            known = x[tuple(sl_known)]
            n_ax = x.shape[ax]
            n_targets = len(range(h, n_ax, s))
            if n_targets == 0:
                continue
            sl_t = list(sl_known)
            sl_t[ax] = slice(h, None, s)
            target = x[tuple(sl_t)]
            if known.shape[ax] >= 2:
                pred = _interp_along(known, ax, kind)
            else:
                pred = np.take(known, [0], axis=ax)
            m = min(pred.shape[ax], n_targets)
            p = np.take(pred, range(m), axis=ax)
            t = np.take(target, range(m), axis=ax)
            out.append((t - p).ravel())
            if n_targets > m:  # trailing point with no right neighbour: copy the left one
                last_known = np.take(known, [known.shape[ax] - 1], axis=ax)
                t_last = np.take(target, [n_targets - 1], axis=ax)
                out.append((t_last - last_known).ravel())
    return np.concatenate(out) if out else np.zeros(0)


def zfp_block_exponents(block: np.ndarray) -> np.ndarray:
    """Common exponent per 4^d block (frexp of the block max |value|), padding edge blocks by edge copy."""
    x = np.asarray(block, dtype=np.float64)
    pad = [(0, (-s) % 4) for s in x.shape]
    if any(p[1] for p in pad):
        x = np.pad(x, pad, mode="edge")
    nd = x.ndim
    shp = []
    for s in x.shape:
        shp += [s // 4, 4]
    xb = x.reshape(shp).transpose(list(range(0, 2 * nd, 2)) + list(range(1, 2 * nd, 2)))
    mx = np.abs(xb).reshape(xb.shape[:nd] + (-1,)).max(axis=-1)
    return np.frexp(mx)[1].ravel()


def compute_features(sample, fill_value=None) -> Features:
    """Features of a :class:`~compression_model.sampling.Sample` (fill detected when not given)."""
    blocks = sample.blocks
    allv = np.concatenate([b.ravel() for b in blocks]).astype(np.float64, copy=False)
    n = allv.size
    nan_share = float(np.isnan(allv).mean()) if n else 0.0
    inf_share = float(np.isinf(allv).mean()) if n else 0.0
    if fill_value is None and np.issubdtype(sample.dtype, np.floating):
        fill_value = detect_fill(allv)
    valid = np.isfinite(allv) & ((allv != fill_value) if fill_value is not None else True)
    fill_share = float((allv == fill_value).mean()) if fill_value is not None else 0.0
    vv = allv[valid]
    vmin, vmax = (float(vv.min()), float(vv.max())) if vv.size else (0.0, 0.0)

    lor, itp, dif = [], [], []
    for b in blocks:
        bf = b.astype(np.float64)
        m = valid_mask(bf, fill_value)
        if not m.any():
            continue
        if not m.all():  # invalid points would poison every prediction that touches them
            bf = np.where(m, bf, 0.0)
        e = lorenzo_errors(bf)
        lor.append(np.abs(e[lorenzo_valid(m)]) if not m.all() else np.abs(e).ravel())
        itp.append(np.abs(interp_errors(bf)))
        dif.append(np.abs(adjacent_differences(bf)).ravel())

    def med(parts):
        return float(np.median(np.concatenate(parts))) if parts and sum(p.size for p in parts) else 0.0

    return Features(
        n_total=sample.n_total, n_sampled=sample.n_sampled, ndim=len(sample.shape),
        itemsize=int(np.dtype(sample.dtype).itemsize), value_min=vmin, value_max=vmax,
        nan_share=nan_share, inf_share=inf_share, fill_share=fill_share,
        fill_value=None if fill_value is None else float(fill_value),
        strategy=sample.strategy, skew=float(sample.skew),
        lorenzo_mad=med(lor), interp_mad=med(itp), diff_mad=med(dif),
    )
