"""SZ3 (prediction-based, error-bounded): pysz in memory, hdf5plugin.SZ3 in HDF5, SZ3Codec in zarr 3."""
from __future__ import annotations

import dataclasses

import numpy as np

from compression_model.codecs.base import LossyCodec, check_float
from compression_model.codecs.plugin import hdf5plugin


def sz3_config(abs_bound: float):
    from pysz import szConfig, szErrorBoundMode

    config = szConfig()
    config.errorBoundMode = szErrorBoundMode.ABS
    config.absErrorBound = abs_bound
    return config


@dataclasses.dataclass(frozen=True)
class SZ3(LossyCodec):
    codec_id = "sz3"
    binding = "pysz"
    # hdf5plugin 7.1's SZ3 filter segfaults on 3-D chunks with NaN (levitus TEMP 16x64x64, 37% NaN: signal
    # 11), while pysz (zarr) and the SZ2 filter keep NaNs and hold the bound
    hdf5_handles_nan = False

    def hdf5_encode(self, data: np.ndarray) -> bytes:
        if np.isnan(data).any():
            raise ValueError("sz3: the HDF5 SZ3 filter crashes on NaN data; fill the NaNs or use Zarr (pysz)")
        return super().hdf5_encode(data)

    def encode(self, data: np.ndarray) -> bytes:
        from pysz import sz

        compressed, _ = sz.compress(check_float(self.codec_id, data), sz3_config(self.abs_bound))
        return compressed.tobytes()

    def decode(self, buf: bytes, shape: tuple, dtype) -> np.ndarray:
        from pysz import sz

        out, _ = sz.decompress(np.frombuffer(buf, dtype=np.uint8), np.dtype(dtype).type, tuple(shape))
        return out.reshape(shape)

    def hdf5_kwargs(self) -> dict:
        return dict(hdf5plugin(f"the HDF5 {self.codec_id} filter").SZ3(absolute=self.abs_bound))

    def zarr_codecs(self) -> dict:
        from compression_model.zarr_sz3 import SZ3Codec

        return {"serializer": SZ3Codec(mode="abs", value=self.abs_bound), "compressors": None}
