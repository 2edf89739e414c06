"""Which traced datasets the models can advise, and in what form; a reason for every other one.

The cost models count chunks, bytes and codec work of fixed-size elements.
Scalars and empty arrays have nothing to chunk; variable-length data
(strings, arrays) and references keep their contents outside the chunks
(HDF5's global heap), where the models cannot see them. Fixed-size elements
that are not real numbers (fixed-length strings, compound rows, opaque, times,
complex) get layout advice without compression estimates; lossy codecs are for floating
point only (``candidates.allowed_codecs``).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from instrumentation.records import DatasetRecord, type_class

NOT_CHUNKED = {
    "vlen-string": "variable-length strings: their bytes live outside the chunks the models count "
                   "(HDF5's global heap, zarr's vlen codec); no layout or codec advice",
    "vlen": "variable-length arrays: their elements live outside the chunks the models count "
            "(HDF5's global heap); no layout or codec advice",
    "reference": "object/region references: pointers into the file, not array data; nothing to advise",
    "object": "Python objects: element sizes unknown to the models; no layout or codec advice",
}
"""Type class -> why a dataset of it gets no advice."""

SAMPLED_CLASSES = ("integer", "float", "bool", "enum")
"""Type classes whose values the compression model can sample and estimate (real numbers)."""


BUILTIN_FILTERS = (1, 2, 3, 4, 5, 6)
"""HDF5's own filters (deflate, shuffle, fletcher32, szip, nbit, scaleoffset); any other is a plugin."""


def dataset_class(ds: DatasetRecord) -> str:
    """The dataset's type class (traces from before ``type_class`` was recorded: from the dtype)."""
    return ds.type_class or type_class(np.dtype(ds.dtype))


def missing_filters(ds: DatasetRecord) -> list[str]:
    """Names of the dataset's HDF5 filters this installation cannot run (its reads fail here)."""
    if ds.library != "hdf5" or not ds.filters:
        return []
    import h5py

    try:
        import hdf5plugin  # noqa: F401 - registers its filters with HDF5
    except ImportError:
        pass
    return [f"{f.name} ({f.filter_id})" for f in ds.filters
            if f.filter_id is not None and not h5py.h5z.filter_avail(f.filter_id)]


def why_not_advised(ds: DatasetRecord, shape: Sequence[int], n_accesses: int) -> str | None:
    """One line saying why ``ds`` gets no layout advice, or None when the models can advise it."""
    if n_accesses == 0:
        missing = missing_filters(ds)
        if missing:
            from compression_model.codecs.plugin import EXTRA_NOTE
            from instrumentation.extras import installed

            return (f"no data read: its filter {', '.join(missing)} is not available here, "
                    "so the program's reads failed" + ("" if installed("hdf5plugin") else f" ({EXTRA_NOTE})"))
        if ds.created:
            return "created but never written"
        plugins = [f"{f.name} ({f.filter_id})" for f in ds.filters if f.filter_id not in BUILTIN_FILTERS]
        return "no data read or written (every access failed)" + (
            f"; its filter {', '.join(plugins)} is a plugin: did the program import hdf5plugin?" if plugins else "")
    if len(shape) == 0:
        return "scalar: nothing to chunk"
    if math.prod(shape) == 0:
        return "empty (size 0): nothing to chunk or compress"
    return NOT_CHUNKED.get(dataset_class(ds))


def compression_note(ds: DatasetRecord) -> str | None:
    """Why compression is not estimated for an advisable dataset (None: it is)."""
    tclass = dataset_class(ds)
    if tclass in SAMPLED_CLASSES:
        return None
    return f"{tclass} data: layout advice only (the compression model samples numbers; no codec estimated)"


__all__ = ["NOT_CHUNKED", "SAMPLED_CLASSES", "compression_note", "dataset_class", "missing_filters",
           "why_not_advised"]
