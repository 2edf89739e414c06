"""No silent data loss: find NaN/Inf/fill values in a sample and the codecs that would corrupt them.

A lossy codec bounds the error of *values*; a NaN that comes back as a number (ZFP), or a fill value
(-1e34 land mask) smeared into its neighbours by a prediction, is data loss the bound does not cover.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from instrumentation.errors import IoadvisorError

DETECT_POINTS = 65536
"""Values handed to fill detection (a strided subsample of the scanned values)."""
HUGE_FILL = 1e30
"""|value| at or above which a float is a fill value (netCDF default fill 9.97e36, ferret -1e34)."""


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


@dataclass(frozen=True)
class DataSafety:
    """Counts over the scanned values; ``finite_min/max`` exclude NaN, Inf and the fill value."""

    n: int
    n_nan: int
    n_inf: int
    fill_value: float | None
    n_fill: int
    finite_min: float
    finite_max: float

    @property
    def data_range(self) -> float:
        """max - min of the valid values (0 when there are none): the base of relative error bounds."""
        return self.finite_max - self.finite_min if self.finite_max >= self.finite_min else 0.0

    @property
    def has_nonfinite(self) -> bool:
        return self.n_nan + self.n_inf > 0

    @property
    def has_fill(self) -> bool:
        return self.n_fill > 0

    def get_config(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_config(cls, config: dict) -> "DataSafety":
        return cls(**config)


def scan(values, fill_value: float | None = None) -> DataSafety:
    """Scan an array (or a sequence of sampled blocks); ``fill_value`` None -> detected (huge or isolated)."""
    blocks = [values] if isinstance(values, np.ndarray) else list(values)
    flat = np.concatenate([np.asarray(b).ravel() for b in blocks]) if blocks else np.zeros(0)
    if flat.dtype.kind not in "fc":
        flat_f = flat.astype(np.float64)
        nan_mask = inf_mask = np.zeros(flat.shape, bool)
    else:
        flat_f = flat
        nan_mask, inf_mask = np.isnan(flat), np.isinf(flat)
    if fill_value is None and flat.dtype.kind == "f":
        # detection sorts its input: a strided subsample finds any value holding >= 1% of the points
        # at a fraction of the cost (the sort was a third of a whole estimate on a 256 MB field)
        fill_value = detect_fill(flat_f[:: max(1, flat.size // DETECT_POINTS)])
    fill_mask = (flat_f == fill_value) if fill_value is not None else np.zeros(flat.shape, bool)
    valid = flat_f[~(nan_mask | inf_mask | fill_mask)]
    lo, hi = (float(valid.min()), float(valid.max())) if valid.size else (math.inf, -math.inf)
    return DataSafety(int(flat.size), int(nan_mask.sum()), int(inf_mask.sum()),
                      None if fill_value is None else float(fill_value), int(fill_mask.sum()), lo, hi)


MAX_SCAN_BYTES = 8 << 30
"""Largest field whose every value ``field_safety`` reads for its range (larger: pass the range)."""
SCAN_SLAB_BYTES = 64 << 20
"""The streaming scan reads slabs of whole chunk rows of about this size."""


class FieldTooLarge(IoadvisorError, ValueError):
    """The field is larger than MAX_SCAN_BYTES: its range cannot be scanned, it must be given."""


def field_safety(data, fill_value: float | None = None, *, sample: DataSafety | None = None,
                 max_bytes: int = MAX_SCAN_BYTES) -> DataSafety:
    """NaN/Inf/fill counts and min/max of the valid values over the *whole* field, streamed slab by slab.

    The range is the base of relative error bounds (``rel:X`` = X times the range of the whole field's
    valid values): a sample can miss the extremes (a hot pixel, a storm) and resolve the bound several
    times too tight. ``data``: numpy array, h5py Dataset or zarr Array, read in slabs of whole chunk rows
    along the first axis. ``fill_value`` None: the fill value ``sample`` detected (else detected on a
    1% sample here). Raises FieldTooLarge above ``max_bytes``.
    """
    shape = tuple(int(s) for s in data.shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(data.dtype).itemsize
    if nbytes > max_bytes:
        raise FieldTooLarge(f"{nbytes / 2**30:.1f} GiB is more than the {max_bytes / 2**30:g} GiB scanned for "
                            "the value range of a relative error bound")
    if fill_value is None:
        if sample is None:
            from compression_model.sampling import sample_blocks

            sample = scan(sample_blocks(data, 0.01, rng=0).blocks)
        fill_value = sample.fill_value
    if not shape:
        return scan(np.asarray(data[()]).reshape(1), fill_value=fill_value)
    chunks = getattr(data, "chunks", None)
    step = int(chunks[0]) if chunks else 1
    row_bytes = max(nbytes // max(shape[0], 1), 1)
    rows = max(step, SCAN_SLAB_BYTES // row_bytes // step * step)
    n = n_nan = n_inf = n_fill = 0
    lo, hi = math.inf, -math.inf
    floating = np.dtype(data.dtype).kind in "fc"
    for start in range(0, shape[0], rows):
        flat = np.asarray(data[start:start + rows]).reshape(-1)
        n += flat.size
        bad = np.zeros(flat.shape, bool)
        if floating:
            nan, inf = np.isnan(flat), np.isinf(flat)
            n_nan, n_inf = n_nan + int(nan.sum()), n_inf + int(inf.sum())
            bad = nan | inf
        if fill_value is not None:
            isfill = flat == fill_value
            n_fill += int(isfill.sum())
            bad |= isfill
        valid = flat[~bad] if bad.any() else flat
        if valid.size:
            lo, hi = min(lo, float(valid.min())), max(hi, float(valid.max()))
    return DataSafety(n, n_nan, n_inf, None if fill_value is None else float(fill_value), n_fill, lo, hi)


def codec_problems(codec, safety: DataSafety, target: str | None = None) -> list[str]:
    """Reasons the codec instance must not be used on this data ([] = safe); ``target`` "hdf5" or "zarr"
    adds the library's own limits (None: both).

    - NaN/Inf with a codec that does not preserve them (ZFP);
    - NaN with a codec whose HDF5 filter fails on them (SZ3), for the HDF5 target;
    - a codec with no zarr 3 implementation (SZ2), for the Zarr target;
    - a fill value within the lossy codec's tolerance of the valid data's range: a reconstructed valid
      point could then be read back as fill (or a fill point as data).
    """
    problems = []
    name = codec.codec_id
    if safety.has_nonfinite and not codec.preserves_nan:
        problems.append(f"{name} does not preserve NaN/Inf ({safety.n_nan} NaN, {safety.n_inf} Inf in sample)")
    if target == "zarr" and not codec.has_zarr_codec:
        problems.append(f"{name}: no zarr 3 codec exists")
    if safety.n_nan and not codec.hdf5_handles_nan and target in (None, "hdf5"):
        problems.append(f"{name}: its HDF5 filter crashes on NaN data ({safety.n_nan} NaN in sample)")
    if safety.has_fill and codec.lossy:
        tol = codec.tolerance
        if safety.finite_min - tol <= safety.fill_value <= safety.finite_max + tol:
            problems.append(f"{name}: fill value {safety.fill_value:g} is within the error bound of valid data")
    return problems
