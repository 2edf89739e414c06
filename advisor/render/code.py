"""The code forms of a recommendation: the codec's arguments as source text for h5py and zarr."""
from __future__ import annotations

from typing import TYPE_CHECKING

from compression_model.error_bound import ErrorBound

if TYPE_CHECKING:
    from advisor.candidates import Candidate
    from advisor.results import DatasetAdvice


def codec_of(c: Candidate, adv: DatasetAdvice):
    from compression_model.codecs import get_codec

    if c.error_bound is None:
        return get_codec(c.compressor)
    return get_codec(c.compressor, ErrorBound("abs", resolved_bound(c, adv)))


def resolved_bound(c: Candidate, adv: DatasetAdvice) -> float:
    """Absolute error bound of a lossy candidate: abs as given, rel x the data range the search measured."""
    if c.error_bound.mode == "abs":
        return c.error_bound.value
    if adv.data_range is None:
        raise ValueError(f"{adv.name}: relative error bound but no data range was measured")
    return c.error_bound.absolute(adv.data_range)


def hdf5_codec_source(c: Candidate, adv: DatasetAdvice) -> tuple[str, bool]:
    """Source text of the create_dataset compression arguments, and whether hdf5plugin is needed."""
    codec = codec_of(c, adv)
    cfg = codec.get_config()
    name = c.compressor
    if name == "gzip":
        return f"compression=\"gzip\", compression_opts={cfg['level']}", False
    if name == "sz3":
        return f"**hdf5plugin.SZ3(absolute={codec.tolerance!r})", True
    if name == "sz":
        return f"**hdf5plugin.SZ(absolute={codec.tolerance!r})", True
    if name == "zfp":
        return f"**hdf5plugin.Zfp(accuracy={codec.tolerance!r})", True
    if name.startswith("blosc-"):
        shuffle = {"noshuffle": "NOSHUFFLE", "shuffle": "SHUFFLE", "bitshuffle": "BITSHUFFLE"}[cfg["shuffle"]]
        return (f"**hdf5plugin.Blosc(cname={cfg['cname']!r}, clevel={cfg['clevel']}, "
                f"shuffle=hdf5plugin.Blosc.{shuffle})"), True
    if name == "zstd":
        return f"**hdf5plugin.Zstd(clevel={cfg['level']})", True
    if name == "lz4":
        return "**hdf5plugin.LZ4()", True
    if name == "bitshuffle-lz4":
        return "**hdf5plugin.Bitshuffle(cname=\"lz4\")", True
    raise ValueError(f"no HDF5 code for compressor {name!r}")


def zarr_codec_source(c: Candidate, adv: DatasetAdvice) -> tuple[str, list[str]]:
    """Source text of the create_array codec arguments and the imports they need."""
    codec = codec_of(c, adv)
    cfg = codec.get_config()
    name = c.compressor
    if name == "sz3":
        return (f"serializer=SZ3Codec(mode=\"abs\", value={codec.tolerance!r}), compressors=None",
                ["from compression_model.zarr_sz3 import SZ3Codec"])
    if name == "zfp":
        return (f"serializer=zarr.codecs.numcodecs.ZFPY(mode=4, tolerance={codec.tolerance!r}), compressors=None",
                ["import zarr.codecs.numcodecs"])
    if name.startswith("blosc-"):
        return (f"compressors=[zarr.codecs.BloscCodec(cname={cfg['cname']!r}, clevel={cfg['clevel']}, "
                f"shuffle={cfg['shuffle']!r})]", [])
    if name == "bitshuffle-lz4":
        return "compressors=[zarr.codecs.BloscCodec(cname=\"lz4\", clevel=5, shuffle=\"bitshuffle\")]", []
    if name == "zstd":
        return f"compressors=[zarr.codecs.ZstdCodec(level={cfg['level']})]", []
    if name == "gzip":
        return f"compressors=[zarr.codecs.GzipCodec(level={cfg['level']})]", []
    if name == "lz4":
        return (f"compressors=[zarr.codecs.numcodecs.LZ4(acceleration={cfg['acceleration']})]",
                ["import zarr.codecs.numcodecs"])
    raise ValueError(f"no Zarr code for compressor {name!r}")
