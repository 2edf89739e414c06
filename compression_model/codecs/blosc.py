"""Blosc (lz4 or zstd, with byte shuffle by default): numcodecs in memory, hdf5plugin.Blosc, zarr BloscCodec."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import Codec
from compression_model.codecs.plugin import hdf5plugin

SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}  # blosc's own numbering


@dataclasses.dataclass(frozen=True)
class Blosc(Codec):
    binding = "numcodecs.Blosc"
    binding_is_filter = True
    cname: str = "zstd"
    clevel: int = 5
    shuffle: str = "shuffle"

    def __post_init__(self) -> None:
        if self.cname not in ("lz4", "zstd"):
            raise ValueError(f"blosc: cname must be lz4 or zstd, not {self.cname!r}")
        if self.shuffle not in SHUFFLES:
            raise ValueError(f"blosc: shuffle must be one of {', '.join(SHUFFLES)}, not {self.shuffle!r}")

    @property
    def codec_id(self) -> str:
        return f"blosc-{self.cname}"

    def _numcodec(self):
        import numcodecs

        return numcodecs.Blosc(cname=self.cname, clevel=self.clevel, shuffle=SHUFFLES[self.shuffle])

    def encode(self, data: np.ndarray) -> bytes:
        return bytes(self._numcodec().encode(np.ascontiguousarray(data)))

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        return np.frombuffer(self._numcodec().decode(buf), dtype=dtype).reshape(shape)

    def hdf5_kwargs(self) -> dict:
        plugin = hdf5plugin(f"the HDF5 {self.codec_id} filter")
        return dict(plugin.Blosc(cname=self.cname, clevel=self.clevel, shuffle=SHUFFLES[self.shuffle]))

    def zarr_codecs(self) -> dict:
        from zarr.codecs import BloscCodec

        return {"compressors": [BloscCodec(cname=self.cname, clevel=self.clevel, shuffle=self.shuffle)]}
