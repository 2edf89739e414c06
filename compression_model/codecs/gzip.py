"""Deflate: numcodecs.GZip in memory and in zarr 3 (GzipCodec); HDF5's built-in gzip filter."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import Codec


@dataclasses.dataclass(frozen=True)
class Gzip(Codec):
    codec_id = "gzip"
    binding = "numcodecs.GZip"
    hdf5_plugin = False  # HDF5's own deflate filter
    level: int = 4  # h5py's default compression_opts for gzip

    def encode(self, data: np.ndarray) -> bytes:
        import numcodecs

        return bytes(numcodecs.GZip(level=self.level).encode(np.ascontiguousarray(data)))

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        import numcodecs

        return np.frombuffer(numcodecs.GZip(level=self.level).decode(buf), dtype=dtype).reshape(shape)

    def hdf5_kwargs(self) -> dict:
        return {"compression": "gzip", "compression_opts": self.level}

    def zarr_codecs(self) -> dict:
        from zarr.codecs import GzipCodec

        return {"compressors": [GzipCodec(level=self.level)]}
