"""SZ (SZ2, prediction-based): no Python binding, so in memory it runs the hdf5plugin SZ filter itself."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import LossyCodec, check_float
from compression_model.codecs.plugin import hdf5plugin


@dataclasses.dataclass(frozen=True)
class SZ(LossyCodec):
    codec_id = "sz"
    has_zarr_codec = False

    def encode(self, data: np.ndarray) -> bytes:
        return self.hdf5_encode(check_float(self.codec_id, data))

    def hdf5_encode(self, data: np.ndarray) -> bytes:
        if data.ndim > 4:
            # the SZ2 library calls exit() on more than 4 dimensions, killing the whole process
            raise ValueError(f"sz: at most 4 dimensions, not {data.ndim}")
        return super().hdf5_encode(data)

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        return self.hdf5_decode(buf, shape, dtype)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").SZ(absolute=self.abs_bound))

    def zarr_codecs(self) -> dict:
        raise ValueError("sz: no zarr codec exists for SZ2; use sz3 with Zarr")
