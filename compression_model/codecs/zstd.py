"""Zstandard: numcodecs.Zstd in memory, hdf5plugin.Zstd in HDF5, zarr ZstdCodec."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import Codec
from compression_model.codecs.plugin import hdf5plugin


@dataclasses.dataclass(frozen=True)
class Zstd(Codec):
    codec_id = "zstd"
    binding = "numcodecs.Zstd"
    binding_is_filter = True
    level: int = 3

    def encode(self, data: np.ndarray) -> bytes:
        import numcodecs

        return bytes(numcodecs.Zstd(level=self.level).encode(np.ascontiguousarray(data)))

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        import numcodecs

        return np.frombuffer(numcodecs.Zstd(level=self.level).decode(buf), dtype=dtype).reshape(shape)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").Zstd(clevel=self.level))

    def zarr_codecs(self) -> dict:
        from zarr.codecs import ZstdCodec

        return {"compressors": [ZstdCodec(level=self.level)]}
