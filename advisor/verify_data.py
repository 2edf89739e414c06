"""The arrays ``advisor.verify`` rebuilds: the data they hold (the user's, read through
``instrumentation.opener``, else a smooth synthetic field) and each layout built on disk with it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from advisor.verify_results import Choice, VerifyError
from instrumentation.errors import InputError
from instrumentation.opener import open_recorded
from instrumentation.records import DatasetRecord
from iomodel.replay import LayoutSpec, build


def synthetic(shape: Sequence[int], dtype: Any, seed: int = 0) -> np.ndarray:
    """A smooth random field plus 1% noise, of the dtype: compresses like simulation output, not like noise.

    Separable (a product of low-frequency cosines per axis, three terms), so it costs one pass.
    """
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    out = np.zeros(shape, dtype=np.float64 if np.dtype(dtype).itemsize > 4 else np.float32)
    for _ in range(3):
        term = np.ones((1,) * len(shape), dtype=out.dtype)
        for d, n in enumerate(shape):
            axis = np.cos(2 * np.pi * rng.uniform(0.5, 4.0) * np.arange(n) / max(n, 1) + rng.uniform(0, 2 * np.pi))
            term = term * axis.astype(out.dtype).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
        out += term
    out += rng.standard_normal(shape).astype(out.dtype) * 0.01
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return out.astype(dt)
    if dt.kind in "iu":
        hi = min(np.iinfo(dt).max, 1 << 20)
        lo = 0 if dt.kind == "u" else -hi
        return np.clip(np.rint(lo + (out + 3.1) / 6.2 * (hi - lo)), lo, hi).astype(dt)
    if dt.kind == "b":
        return out > 0
    raise VerifyError(f"cannot make synthetic data of dtype {dt}")


def load_data(ds: DatasetRecord, shape: Sequence[int], seed: int = 0) -> tuple[np.ndarray, str]:
    """The array's content over ``shape``: the user's (padded with synthetic values where the file is smaller
    than the traced extent) or synthetic; and which one ("user" | "synthetic")."""
    try:
        opened = open_recorded(ds)
    except InputError:  # unreadable, moved, other format: verify with synthetic data instead
        return synthetic(shape, ds.dtype, seed), "synthetic"
    with opened:
        arr = opened.array
        if tuple(arr.shape) == () or np.dtype(arr.dtype) != np.dtype(ds.dtype):
            return synthetic(shape, ds.dtype, seed), "synthetic"
        have = tuple(min(a, s) for a, s in zip(arr.shape, shape))
        part = np.asarray(arr[tuple(slice(0, h) for h in have)])
    if have == tuple(shape):
        return part, "user"
    data = synthetic(shape, ds.dtype, seed)
    data[tuple(slice(0, h) for h in have)] = part
    return data, "user"


def layout_spec(choice: Choice, ds: DatasetRecord) -> LayoutSpec:
    """What ``iomodel.replay`` builds for ``choice``: its layout (unfiltered; the filters go separately)."""
    layout = replace(choice.layout, filtered=False)
    spec = LayoutSpec.of(layout, dtype=ds.dtype, filters=choice.filters)
    if choice.stack:  # netCDF-C's default chunk cache where the program or the recipe sets none
        spec = replace(spec, stack=choice.stack, rdcc=None if choice.default_cache else spec.rdcc)
    return spec


def _codec(choice: Choice, data: np.ndarray):
    if not choice.compressor or choice.compressor == "none":
        return None
    from compression_model.codecs import get_codec

    finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
    rng = float(finite.max() - finite.min()) if finite.size else 0.0
    return get_codec(choice.compressor, choice.error_bound, rng)


def build_choice(choice: Choice, ds: DatasetRecord, workdir: Path, data: np.ndarray, *,
                 fill: bool, shape: Sequence[int], resizable: bool) -> Path:
    """Create the array of ``choice`` under workdir; written whole from ``data`` when ``fill``."""
    spec = layout_spec(choice, ds)
    if choice.stack == "netcdf4":
        from advisor.verify_stack import netcdf4_create_kwargs

        kwargs = netcdf4_create_kwargs(choice)
        return build(spec, workdir, fill=fill, data=data, shape=shape, resizable=resizable, create_kwargs=kwargs)
    codec = _codec(choice, data)
    kwargs = None if codec is None else codec.hdf5_kwargs() if spec.library == "hdf5" else codec.zarr_codecs()
    return build(spec, workdir, fill=fill, data=data, shape=shape, resizable=resizable, create_kwargs=kwargs)


__all__ = ["build_choice", "layout_spec", "load_data", "synthetic"]
