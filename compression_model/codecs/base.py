"""The Codec interface (after numcodecs' abc.Codec): one small implementation per compressor.

A codec instance is fully specified: a lossy codec carries its *absolute* error bound (``tolerance``), so
``encode``, ``hdf5_kwargs`` and ``zarr_codecs`` all describe the same compressor.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar

import numpy as np

from compression_model.codecs.hdf5_filter import hdf5_decode, hdf5_encode


class Codec(abc.ABC):
    """Subclasses are frozen dataclasses whose fields are the codec's JSON-safe parameters."""

    codec_id: ClassVar[str]
    lossy: ClassVar[bool] = False
    preserves_nan: ClassVar[bool] = True
    """False when NaN/Inf do not survive a round trip (ZFP): never recommend for such data."""
    has_zarr_codec: ClassVar[bool] = True
    """False when no zarr 3 codec exists (SZ2): not a Zarr candidate."""
    hdf5_handles_nan: ClassVar[bool] = True
    """False when the codec's HDF5 filter fails on NaN data (the hdf5plugin SZ3 filter segfaults)."""
    hdf5_plugin: ClassVar[bool] = True
    """True when the HDF5 filter comes from hdf5plugin (an optional extra), False for HDF5's own (gzip)."""
    binding: ClassVar[str | None] = None
    """The Python binding ``encode`` runs (numcodecs, pysz, zfpy), None when it runs the HDF5 filter itself."""
    binding_is_filter: ClassVar[bool] = False
    """True when the binding stores what the HDF5 filter stores (same library and parameters): without
    hdf5plugin the HDF5 estimate uses it (``codecs.plugin.estimate_target``). Not pysz: its SZ3 gave ratio 44
    where the hdf5plugin 7.1 filter gave 14 on the same field and bound (tests/advisor/test_extras.py)."""

    @property
    def tolerance(self) -> float | None:
        """Absolute error bound (None for a lossless codec)."""
        return None

    @abc.abstractmethod
    def encode(self, data: np.ndarray) -> bytes:
        """Compress ``data`` in memory with the codec's Python binding (what Zarr would store)."""

    @abc.abstractmethod
    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        """Inverse of ``encode``."""

    @abc.abstractmethod
    def hdf5_kwargs(self) -> dict:
        """Keyword arguments for ``h5py.Group.create_dataset`` (compression filter via hdf5plugin)."""

    @abc.abstractmethod
    def zarr_codecs(self) -> dict:
        """Keyword arguments for ``zarr.create_array``: ``serializer`` and/or ``compressors``."""

    def hdf5_encode(self, data: np.ndarray) -> bytes:
        """The bytes the real HDF5 filter stores for ``data`` as one chunk."""
        return hdf5_encode(data, self.hdf5_kwargs())

    def hdf5_decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        return hdf5_decode(buf, shape, dtype, self.hdf5_kwargs())

    def get_config(self) -> dict:
        return {"id": self.codec_id, **dataclasses.asdict(self)}

    @classmethod
    def from_config(cls, config: dict) -> "Codec":
        return cls(**{k: v for k, v in config.items() if k != "id"})

    def __str__(self) -> str:
        return self.codec_id if self.tolerance is None else f"{self.codec_id}(abs:{self.tolerance:g})"


@dataclasses.dataclass(frozen=True)
class LossyCodec(Codec):
    """A lossy codec with a point-wise absolute error bound."""

    lossy: ClassVar[bool] = True
    abs_bound: float = 1e-3

    def __post_init__(self) -> None:
        if not (self.abs_bound > 0 and np.isfinite(self.abs_bound)):
            raise ValueError(f"{self.codec_id}: absolute error bound must be positive, not {self.abs_bound!r}")

    @property
    def tolerance(self) -> float:
        return self.abs_bound


def check_float(codec_id: str, data: np.ndarray) -> np.ndarray:
    """Lossy codecs here take float32/float64 only; make the input C-contiguous native-endian."""
    if data.dtype.kind != "f" or data.dtype.itemsize not in (4, 8):
        raise ValueError(f"{codec_id}: needs float32 or float64 data, not {data.dtype}")
    return np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("="))
