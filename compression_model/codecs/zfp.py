"""ZFP fixed-accuracy (transform-based): zfpy in memory, hdf5plugin.Zfp in HDF5, numcodecs ZFPY in zarr 3.

ZFP does not preserve NaN/Inf (a masked ocean field came back with errors of 24 against a tolerance of 0.01).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import LossyCodec, check_float
from compression_model.codecs.plugin import hdf5plugin

ZFP_MODE_FIXED_ACCURACY = 4  # numcodecs.zfpy mode number


@dataclasses.dataclass(frozen=True)
class ZFP(LossyCodec):
    codec_id = "zfp"
    binding = "zfpy"
    binding_is_filter = True
    preserves_nan = False

    def encode(self, data: np.ndarray) -> bytes:
        import zfpy

        return zfpy.compress_numpy(check_float(self.codec_id, data), tolerance=self.abs_bound)

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        import zfpy

        return zfpy.decompress_numpy(bytes(buf)).reshape(shape).astype(dtype, copy=False)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").Zfp(accuracy=self.abs_bound))

    def zarr_codecs(self) -> dict:
        from zarr.codecs.numcodecs import ZFPY

        # array-to-bytes: it must be the serializer, never a compressor
        return {"serializer": ZFPY(mode=ZFP_MODE_FIXED_ACCURACY, tolerance=self.abs_bound), "compressors": None}
