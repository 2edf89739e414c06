"""Codec registry: real compressors by name, each with in-memory encode/decode, HDF5 and zarr 3 settings."""
from __future__ import annotations

from compression_model.codecs.base import Codec, LossyCodec
from compression_model.codecs.bitshuffle import Bitshuffle
from compression_model.codecs.blosc import Blosc
from compression_model.codecs.gzip import Gzip
from compression_model.codecs.lz4 import LZ4
from compression_model.codecs.plugin import unavailable as plugin_unavailable
from compression_model.codecs.sz import SZ
from compression_model.codecs.sz3 import SZ3
from compression_model.codecs.zfp import ZFP
from compression_model.codecs.zstd import Zstd
from compression_model.error_bound import ErrorBound
from instrumentation.errors import InputError

_REGISTRY: dict[str, tuple[type[Codec], dict]] = {
    "sz3": (SZ3, {}),
    "sz": (SZ, {}),
    "zfp": (ZFP, {}),
    "blosc-zstd": (Blosc, {"cname": "zstd"}),
    "blosc-lz4": (Blosc, {"cname": "lz4"}),
    "zstd": (Zstd, {}),
    "lz4": (LZ4, {}),
    "bitshuffle-lz4": (Bitshuffle, {}),
    "gzip": (Gzip, {}),
}
CODEC_NAMES = tuple(_REGISTRY)
LOSSY_NAMES = tuple(n for n, (cls, _) in _REGISTRY.items() if cls.lossy)
LOSSLESS_NAMES = tuple(n for n in CODEC_NAMES if n not in LOSSY_NAMES)


def get_codec(name: str, error_bound: ErrorBound | str | None = None, data_range: float | None = None) -> Codec:
    """The codec ``name``; a lossy one needs ``error_bound`` (resolved to absolute with ``data_range``)."""
    if name not in _REGISTRY:
        raise InputError(f"unknown compressor {name!r}; known: {', '.join(CODEC_NAMES)}")
    cls, params = _REGISTRY[name]
    if not cls.lossy:
        return cls(**params)
    if error_bound is None:
        raise InputError(f"{name} is lossy and needs an error bound (e.g. rel:1e-3)")
    if isinstance(error_bound, str):
        error_bound = ErrorBound.parse(error_bound)
    return cls(abs_bound=error_bound.absolute(data_range), **params)


def unavailable(name: str, library: str | None = None) -> str | None:
    """Why codec ``name`` cannot be estimated for ``library`` (None: either) in this installation (an optional
    extra is missing), or None."""
    if name not in _REGISTRY:
        raise InputError(f"unknown compressor {name!r}; known: {', '.join(CODEC_NAMES)}")
    return plugin_unavailable(_REGISTRY[name][0], library)


def from_config(config: dict) -> Codec:
    """Inverse of ``Codec.get_config``."""
    name = config.get("id")
    if name not in _REGISTRY:
        raise InputError(f"unknown codec id {name!r} in config")
    return _REGISTRY[name][0].from_config(config)


__all__ = ["Codec", "LossyCodec", "CODEC_NAMES", "LOSSY_NAMES", "LOSSLESS_NAMES", "get_codec", "from_config",
           "unavailable", "SZ3", "SZ", "ZFP", "Blosc", "Zstd", "LZ4", "Bitshuffle", "Gzip"]
