"""Bitshuffle + LZ4: the hdf5plugin Bitshuffle filter (run in memory through HDF5, as it has no other
binding here); in zarr 3 the same algorithm is Blosc(lz4, bitshuffle), framed by blosc."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import Codec
from compression_model.codecs.plugin import hdf5plugin


@dataclasses.dataclass(frozen=True)
class Bitshuffle(Codec):
    codec_id = "bitshuffle-lz4"

    def encode(self, data: np.ndarray) -> bytes:
        return self.hdf5_encode(np.ascontiguousarray(data))

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        return self.hdf5_decode(buf, shape, dtype)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").Bitshuffle(cname="lz4"))

    def zarr_codecs(self) -> dict:
        from zarr.codecs import BloscCodec

        return {"compressors": [BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle")]}
