"""SZ3 as a zarr 3 array-to-bytes codec (numcodecs has none), backed by pysz.

Use it as the array's serializer: ``zarr.create_array(..., serializer=SZ3Codec(mode="abs", value=0.01),
compressors=None)``. Importing this module registers the codec under the name ``ioadvisor.sz3``, so arrays
written with it can be reopened in the same process; other processes need the ``zarr.codecs`` entry point
(``ioadvisor.sz3 = compression_model.zarr_sz3:SZ3Codec``) or an import of this module.

``mode="rel"`` is SZ3's own relative mode: relative to *each chunk's* value range, so the absolute error
differs per chunk; the advisor always writes ``mode="abs"`` resolved from the whole field's range.
This module imports zarr at module level: it is a zarr plug-in and is only imported where zarr is used.
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from zarr.abc.codec import ArrayBytesCodec
from zarr.core.common import JSON, parse_named_configuration
from zarr.registry import register_codec

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer

CODEC_NAME = "ioadvisor.sz3"
_DTYPES = ("float32", "float64", "int32", "int64")  # what pysz compresses


@dataclass(frozen=True)
class SZ3Codec(ArrayBytesCodec):
    """SZ3 error-bounded compression of each chunk (``mode`` abs or rel, ``value`` > 0)."""

    is_fixed_size = False

    mode: str = "abs"
    value: float = 1e-3

    def __init__(self, *, mode: str = "abs", value: float = 1e-3) -> None:
        if mode not in ("abs", "rel"):
            raise ValueError(f"{CODEC_NAME}: mode must be abs or rel, not {mode!r}")
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{CODEC_NAME}: value must be a positive finite number, not {value!r}")
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "value", float(value))

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, configuration = parse_named_configuration(data, CODEC_NAME)
        return cls(**configuration)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        return {"name": CODEC_NAME, "configuration": {"mode": self.mode, "value": self.value}}

    def validate(self, *, shape, dtype, chunk_grid) -> None:
        native = dtype.to_native_dtype()
        if native.name not in _DTYPES:
            raise ValueError(f"{CODEC_NAME}: data type {native} not supported (need one of {', '.join(_DTYPES)})")

    def _config(self):
        from pysz import szConfig, szErrorBoundMode

        config = szConfig()
        if self.mode == "abs":
            config.errorBoundMode = szErrorBoundMode.ABS
            config.absErrorBound = self.value
        else:
            config.errorBoundMode = szErrorBoundMode.REL
            config.relErrorBound = self.value
        return config

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        from pysz import sz

        data = np.ascontiguousarray(chunk_array.as_numpy_array())
        data = data.astype(data.dtype.newbyteorder("="), copy=False)
        compressed, _ = sz.compress(data, self._config())
        return chunk_spec.prototype.buffer.from_bytes(compressed.tobytes())

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        from pysz import sz

        dtype = chunk_spec.dtype.to_native_dtype()
        raw = np.frombuffer(chunk_bytes.to_bytes(), dtype=np.uint8)
        out, _ = sz.decompress(raw, dtype.newbyteorder("=").type, tuple(chunk_spec.shape))
        return chunk_spec.prototype.nd_buffer.from_numpy_array(out.reshape(chunk_spec.shape).astype(dtype))

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError  # variable-size output


register_codec(CODEC_NAME, SZ3Codec)
