"""Run a chunk through a real HDF5 filter pipeline in memory (h5py core driver, direct chunk I/O).

This is what HDF5 stores for a chunk: the bytes the filter produced, with no file around them. Used for
codecs that have no Python binding (SZ, Bitshuffle) and by the estimator when the target library is HDF5.
"""
from __future__ import annotations

import itertools
import time

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


def _stage(ds, buf: bytes, raw_size: int) -> None:
    ds.id.write_direct_chunk((0,) * ds.ndim, buf, _ALL_FILTERS_SKIPPED if len(buf) == raw_size else 0)


def hdf5_decode(buf: bytes, shape: tuple, dtype, kwargs: dict) -> np.ndarray:
    dtype = np.dtype(dtype)
    ds = _dataset(kwargs, tuple(shape), dtype)
    _stage(ds, bytes(buf), int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    return ds[...]


def hdf5_decode_seconds(buf: bytes, shape: tuple, dtype, kwargs: dict, passes: int = 2) -> tuple[np.ndarray, float]:
    """(the chunk ``buf`` decodes to, CPU seconds of the filter's own work on it), best of ``passes``.

    The work is what a read of the stored chunk costs beyond a read of the same chunk stored raw, whose
    copies the I/O model prices: a raw read copies the chunk twice (file image to chunk buffer, buffer to
    caller), a filtered one copies the stored bytes in, decodes, and copies the chunk out. So
    decode = filtered read - raw read x (1 + stored/raw) / 2. Against what compressing added to real-file
    reads (page cache, fresh handle per read; bitshuffle-lz4, blosc-zstd, zstd) this came within 0.91-1.08x
    for 0.5-4 MiB chunks and 0.74-1.21x for 16-31 MiB; timing the whole in-memory round trip gave 1.1-1.7x,
    and once per block (first touches of fresh buffers) about 2.5x (benchmarks/decode_cost.py,
    docs/compression-validation.md). From 32 MiB glibc maps every buffer fresh, for raw chunks too, and
    neither this nor the I/O model prices that.
    """
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    raw_size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = bytes(buf)
    raw = _dataset({}, shape, dtype)
    filtered = _dataset(kwargs, shape, dtype)
    if not raw.id.valid:  # creating the filtered one emptied the cache of datasets
        raw = _dataset({}, shape, dtype)
    out = np.empty(shape, dtype)
    _stage(filtered, buf, raw_size)
    filtered.read_direct(out)  # untimed: the decoded values, and first touches of every buffer
    plain = out.tobytes()

    def best(ds, data: bytes) -> float:
        times = []
        for _ in range(passes):
            _stage(ds, data, raw_size)  # a staged chunk is not in the chunk cache: the read decodes it
            t0 = time.process_time()
            ds.read_direct(out)
            times.append(time.process_time() - t0)
        return min(times)

    t_filtered, t_raw = best(filtered, buf), best(raw, plain)
    # a chunk the filter declined is stored raw and not decoded: a nanosecond, not zero, keeps throughputs finite
    return out, max(t_filtered - t_raw * (1 + len(buf) / raw_size) / 2, 1e-9)
