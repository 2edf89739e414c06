"""The codec search on the object store (issue #35): compressors estimated on a sample of the data where it is.

The traced array is opened on its store (same URL, same storage options: ``advisor.objectstore_build.user_array``)
and a sample of it read: the whole array up to ``SAMPLE_BYTES``, else ``BANDS`` bands of whole rows along the first
dimension, evenly spaced and aligned to its chunks, together ``SAMPLE_BYTES``. The compressors the constraints
allow (``advisor.candidates.allowed_codecs``: the lossless defaults, and the lossy ones within ``max_error``) are
estimated on that sample by ``compression_model.estimate`` (Zarr's codec bindings) with chunks of about
``CHUNK_TARGET`` bytes (the size the store advice aims at); each gives its ratio and decoding speed, and
``advisor.objectstore`` prices every Zarr candidate with each: fewer bytes per GET, plus the decoding of the raw
bytes read. A relative bound is resolved against the sample's range, which is at most the field's: the tolerance
used is never looser than the user's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.objectstore_build import user_array

MiB = 2**20
SAMPLE_BYTES = 64 * MiB
"""Bytes of the array read from the store for the estimates."""
BANDS = 8
CHUNK_TARGET = 4 * MiB
SAMPLE_FRACTION = 0.05
"""Of the sample, the fraction ``compression_model.estimate`` compresses per codec (in blocks)."""


@dataclass(frozen=True)
class StoreCodec:
    """A compressor's estimate on the data: ``ratio`` raw/stored, ``decode_bps`` raw bytes decoded per second
    (0: nothing to decode)."""

    name: str
    error_bound: str | None
    ratio: float
    decode_bps: float
    ratio_ci: tuple[float, float] = (1.0, 1.0)
    method: str = "none"

    def get_config(self) -> dict:
        return {"name": self.name, "error_bound": self.error_bound, "ratio": self.ratio, "decode_bps": self.decode_bps,
                "ratio_ci": list(self.ratio_ci), "method": self.method}

    @classmethod
    def from_config(cls, c: dict) -> "StoreCodec":
        return cls(c["name"], c.get("error_bound"), float(c["ratio"]), float(c["decode_bps"]),
                   tuple(c.get("ratio_ci", (1.0, 1.0))), c.get("method", "none"))


UNCOMPRESSED = StoreCodec("none", None, 1.0, 0.0)


def sample_of(arr, max_bytes: int = SAMPLE_BYTES, bands: int = BANDS) -> np.ndarray:
    """The whole array when it is at most ``max_bytes``, else ``bands`` chunk-aligned bands of whole rows."""
    shape = tuple(int(s) for s in arr.shape)
    itemsize = np.dtype(arr.dtype).itemsize
    if not shape or math.prod(shape) * itemsize <= max_bytes:
        return np.asarray(arr[...])
    row = math.prod(shape[1:]) * itemsize
    tail = tuple(slice(0, s) for s in shape[1:])
    if row * bands > max_bytes:  # rows too large: the first rows, cut along the next dimensions to fit
        keep = max(1, max_bytes // (bands * itemsize))
        tail = []
        for s in shape[1:]:
            take = max(1, min(s, keep))
            tail.append(slice(0, take))
            keep = max(1, keep // take)
        tail = tuple(tail)
        row = math.prod(t.stop for t in tail) * itemsize
    c0 = int((getattr(arr, "chunks", None) or shape)[0])
    rows = max(1, max_bytes // (bands * row))
    rows = max(c0, rows // c0 * c0) if rows >= c0 else rows
    rows = min(rows, shape[0])
    unit = c0 if rows >= c0 else 1  # bands of whole chunks when they hold one
    starts = sorted({int(s) // unit * unit for s in np.linspace(0, shape[0] - rows, bands)})
    return np.concatenate([np.asarray(arr[(slice(s, s + rows),) + tail]) for s in starts])


def estimate_chunks(chunks, shape, itemsize: int, target: int = CHUNK_TARGET) -> tuple[int, ...]:
    """The array's chunks grown in proportion to about ``target`` bytes, within ``shape``."""
    c = np.array([min(int(x), int(s)) for x, s in zip(chunks or shape, shape)], np.float64)
    for _ in range(64):
        grow = c < np.array(shape)
        if c.prod() * itemsize >= target or not grow.any():
            break
        f = (target / (c.prod() * itemsize)) ** (1 / grow.sum())
        c = np.where(grow, np.minimum(np.ceil(c * max(f, 1.01)), shape), c)
    return tuple(int(x) for x in c)


def estimate_store_codecs(ds, storage_options: dict | None, *, max_error=None, lossless_only: bool = False,
                          max_bytes: int = SAMPLE_BYTES) -> tuple[list[StoreCodec], list[str]]:
    """Uncompressed and each allowed compressor, estimated on a sample of ``ds`` read from its store; and notes
    (codecs left out, or why nothing was estimated)."""
    from advisor.candidates import allowed_codecs
    from compression_model.estimate import estimate
    from instrumentation.errors import IoadvisorError

    choices, notes = allowed_codecs(ds.dtype, max_error=max_error, lossless_only=lossless_only)
    try:
        with user_array(ds.file, ds.path, ds.library, storage_options) as arr:
            sample = sample_of(arr, max_bytes)
    except Exception as exc:  # noqa: BLE001 - any client or library failure: the advice goes on without codecs
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return [], notes + [f"{ds.label}: not readable on its store ({first}); compressors not estimated"]
    if sample.dtype.kind not in "biuf" or not sample.size:
        return [], notes + [f"{ds.label}: {sample.dtype} data; compressors not estimated"]
    chunks = estimate_chunks(ds.chunks, sample.shape, sample.dtype.itemsize)
    out = [UNCOMPRESSED]
    for c in choices:
        try:
            est = estimate(sample, c.name, c.error_bound, chunks, target="zarr", sample_fraction=SAMPLE_FRACTION)
        except (IoadvisorError, ValueError, ImportError) as exc:
            notes.append(f"{c.name} left out: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        if est.problems:
            notes.append(f"{c.name} left out: {est.problems[0]}")
            continue
        out.append(StoreCodec(c.name, None if c.error_bound is None else str(c.error_bound), float(est.ratio),
                              float(est.decompress_mbps) * 1e6, tuple(float(x) for x in est.ratio_ci), est.method))
    return out, notes


__all__ = ["BANDS", "CHUNK_TARGET", "SAMPLE_BYTES", "StoreCodec", "UNCOMPRESSED", "estimate_chunks",
           "estimate_store_codecs", "sample_of"]
