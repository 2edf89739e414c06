"""Run a chunk through a real HDF5 filter pipeline in memory (h5py core driver, direct chunk I/O).

This is what HDF5 stores for a chunk: the bytes the filter produced, with no file around them. Used for
codecs that have no Python binding (SZ, Bitshuffle) and by the estimator when the target library is HDF5.
"""
from __future__ import annotations

import itertools

import numpy as np

_MAX_CACHED = 32
_datasets: dict = {}  # (filter kwargs, shape, dtype) -> h5py.Dataset in one in-memory file
_file = None
_names = itertools.count()


def prepare(kwargs: dict, shape: tuple, dtype) -> None:
    """Create the in-memory dataset for this (filters, shape, dtype) now, outside any timed call."""
    _dataset(kwargs, tuple(shape), np.dtype(dtype))


def _dataset(kwargs: dict, shape: tuple, dtype: np.dtype):
    import h5py

    global _file
    key = (repr(sorted(kwargs.items())), tuple(shape), np.dtype(dtype).str)
    ds = _datasets.get(key)
    if ds is None:
        if _file is None or len(_datasets) >= _MAX_CACHED:
            _datasets.clear()
            if _file is not None:
                _file.close()
            _file = h5py.File(f"ioadvisor-filter-{id(_datasets)}", "w", driver="core", backing_store=False)
        # no chunk cache: every write goes through the filter at once
        ds = _file.create_dataset(f"c{next(_names)}", shape=shape, dtype=dtype, chunks=tuple(shape),
                                  rdcc_nbytes=0, **kwargs)
        _datasets[key] = ds
    return ds


def hdf5_encode(data: np.ndarray, kwargs: dict) -> bytes:
    """The bytes HDF5 stores for ``data`` as one chunk with filters ``kwargs`` (create_dataset kwargs)."""
    data = np.ascontiguousarray(data)
    ds = _dataset(kwargs, data.shape, data.dtype)
    ds[...] = data
    _, buf = ds.id.read_direct_chunk((0,) * data.ndim)
    # a non-zero filter mask means an optional filter declined (e.g. Blosc on a tiny chunk): HDF5 then
    # stores the raw bytes, which is what is returned; hdf5_decode recognises them by their size
    return bytes(buf)


_ALL_FILTERS_SKIPPED = 0xFFFFFFFF


def hdf5_decode(buf: bytes, shape: tuple, dtype, kwargs: dict) -> np.ndarray:
    dtype = np.dtype(dtype)
    ds = _dataset(kwargs, tuple(shape), dtype)
    raw_size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    ds.id.write_direct_chunk((0,) * len(shape), bytes(buf), _ALL_FILTERS_SKIPPED if len(buf) == raw_size else 0)
    return ds[...]
