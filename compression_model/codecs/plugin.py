"""hdf5plugin, the optional extra ``ioadvisor[hdf5-filters]``: the HDF5 filters of every codec but gzip.

Without it the advice still prices those codecs for HDF5 where a Python binding stores what the filter stores
(numcodecs' Zstd, Blosc, LZ4, and zfpy, up to a few header bytes: ``Codec.binding_is_filter``): the estimate
compresses the sample with that binding instead of running the HDF5 filter, and says so in a note. Writing,
reading, verifying or applying HDF5 data with a plugin filter needs hdf5plugin, and says so in one line.
"""
from __future__ import annotations

from instrumentation.extras import MissingExtra, installed, missing

EXTRA_NOTE = "pip install 'ioadvisor[hdf5-filters]' to run the HDF5 filter itself"


def hdf5plugin(feature: str):
    """The hdf5plugin module (its import registers the filters with HDF5), or MissingExtra naming ``feature``."""
    if not installed("hdf5plugin"):
        raise missing("hdf5plugin", feature)
    import hdf5plugin as module

    return module


def register_filters() -> bool:
    """Register hdf5plugin's filters with HDF5 when it is installed (reading data written with them)."""
    if not installed("hdf5plugin"):
        return False
    import hdf5plugin  # noqa: F401

    return True


def unavailable(codec_class, target: str | None = None) -> str | None:
    """Why a codec of ``codec_class`` cannot be estimated here for ``target`` (None: it can; ``target`` None:
    for either library): hdf5plugin is not installed and the codec's only implementation is its filter (SZ2,
    Bitshuffle), or, for HDF5, its binding does not store what the filter stores (pysz's SZ3)."""
    if installed("hdf5plugin"):
        return None
    if codec_class.binding is None:
        return str(missing("hdf5plugin", f"{codec_class.codec_id} (its only implementation is the HDF5 filter)"))
    if target == "hdf5" and codec_class.hdf5_plugin and not codec_class.binding_is_filter:
        return str(missing("hdf5plugin", f"estimating the HDF5 {codec_class.codec_id} filter ({codec_class.binding} "
                                         f"compresses unlike it)"))
    return None


def estimate_target(codec, target: str) -> tuple[str, str | None]:
    """(the library whose codec path measures ``codec`` for ``target``, a note when that is not the target's own).

    Without hdf5plugin, an HDF5 filter whose binding stores the same bytes (numcodecs' Zstd, Blosc, LZ4, zfpy) is
    measured through that binding (its times leave out HDF5's filter call); any other raises MissingExtra."""
    why = unavailable(type(codec), target)
    if why:
        raise MissingExtra(why)
    if target != "hdf5" or not codec.hdf5_plugin or installed("hdf5plugin"):
        return target, None
    return "zarr", (f"estimated with {codec.binding}, which stores what the HDF5 filter stores: hdf5plugin is not "
                    f"installed ({EXTRA_NOTE})")


def without_plugin_note() -> str | None:
    """The advice's note when hdf5plugin is missing (None when it is installed)."""
    if installed("hdf5plugin"):
        return None
    return ("hdf5plugin is not installed: HDF5 zstd, blosc, lz4 and zfp filters estimated with numcodecs/zfpy "
            "(the same stream), sz, sz3 and bitshuffle-lz4 not priced for HDF5; pip install "
            "'ioadvisor[hdf5-filters]' to run the filters themselves")
