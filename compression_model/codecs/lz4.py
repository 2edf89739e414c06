"""LZ4: numcodecs.LZ4 in memory, hdf5plugin.LZ4 in HDF5, numcodecs LZ4 as a zarr 3 compressor."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import Codec
from compression_model.codecs.plugin import hdf5plugin


@dataclasses.dataclass(frozen=True)
class LZ4(Codec):
    codec_id = "lz4"
    binding = "numcodecs.LZ4"
    binding_is_filter = True
    acceleration: int = 1

    def encode(self, data: np.ndarray) -> bytes:
        import numcodecs

        return bytes(numcodecs.LZ4(acceleration=self.acceleration).encode(np.ascontiguousarray(data)))

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        import numcodecs

        return np.frombuffer(numcodecs.LZ4().decode(buf), dtype=dtype).reshape(shape)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").LZ4())

    def zarr_codecs(self) -> dict:
        from zarr.codecs.numcodecs import LZ4 as ZarrLZ4

        return {"compressors": [ZarrLZ4(acceleration=self.acceleration)]}
