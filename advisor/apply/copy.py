"""Moving the data: open the source read-only and the destination for writing, copy one block, read it
back and compare it with what was read (``check.compare_block``).

Every block is written whole (it covers whole chunks or shards of what it is written to), flushed, read
back from the file and compared before the journal records it. The HDF5 destination is opened with its
metadata cache's evictions off, so its metadata reaches the file only at the flush after each block: a
kill between two flushes leaves the file as it was at the last one (the blocks the journal records), and
with no chunk cache, so the read-back goes through the file and the filters, not memory.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compression_model.codecs.plugin import register_filters

from .check import compare_block
from .plan import Stage
from .structure import fill_value_from_zarr
from .targets import ApplyError

NAN_UNSAFE_HDF5 = ("sz3", "sz")
"""Codecs whose hdf5plugin filter (7.1) segfaults writing a chunk with NaN values (a (40, 36, 72) float32
field with 3 NaN rows: SIGSEGV in H5Dwrite); their Zarr codec keeps NaN."""


def open_source(path: str | Path, library: str):
    """The root of the source, read-only: a group, or the array a Zarr store holds at its root."""
    register_filters()  # compressed sources need them (without hdf5plugin, a plugin-filtered read says so)

    if library == "hdf5":
        import h5py

        return h5py.File(path, "r")
    import zarr
    from zarr.storage import LocalStore

    return zarr.open(store=LocalStore(str(path), read_only=True), mode="r")


def is_root_array(root) -> bool:
    """A Zarr store whose root is an array (not a group): the array itself is the store's one object."""
    return not hasattr(root, "keys") and hasattr(root, "shape")


def array_at(root, path: str):
    """The array at ``path`` of a source or destination root ("/" of a root array is the array itself)."""
    return root if is_root_array(root) and path.strip("/") == "" else root[path]


def _h5_fapl():
    from h5py import h5p

    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fclose_degree(1)  # weak, as h5py's own files
    cfg = fapl.get_mdc_config()
    cfg.evictions_enabled = False
    cfg.incr_mode = 0
    cfg.flash_incr_mode = 0
    cfg.decr_mode = 0
    fapl.set_mdc_config(cfg)
    # no chunk cache: whole-chunk writes go straight to the file, read-backs come from it
    fapl.set_cache(0, 521, 0, 0.75)
    return fapl


def create_dest(path: Path, library: str, src_root=None):
    """A new, empty destination root (HDF5: with the source file's creation properties when it is HDF5)."""
    if library == "hdf5":
        import h5py
        from h5py import h5f, h5p

        if src_root is not None and isinstance(src_root, h5py.File):
            fcpl = src_root.id.get_create_plist()
        else:
            fcpl = h5p.create(h5p.FILE_CREATE)
            fcpl.set_link_creation_order(h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)
            fcpl.set_attr_creation_order(h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)
        fid = h5f.create(str(path).encode(), h5f.ACC_EXCL, fapl=_h5_fapl(), fcpl=fcpl)
        return h5py.File(fid)
    import zarr
    from zarr.storage import LocalStore

    if src_root is not None and is_root_array(src_root):
        return LocalStore(str(path))  # the array itself is made at the store's root (structure.create_structure)
    return zarr.open_group(store=LocalStore(str(path)), mode="w-", zarr_format=3)


def open_dest(path: Path, library: str):
    """The destination root, opened again to resume writing."""
    register_filters()

    if library == "hdf5":
        import h5py
        from h5py import h5f

        return h5py.File(h5f.open(str(path).encode(), h5f.ACC_RDWR, fapl=_h5_fapl()))
    import zarr
    from zarr.errors import ContainsArrayError
    from zarr.storage import LocalStore

    try:
        return zarr.open_group(store=LocalStore(str(path)), mode="r+", use_consolidated=False)
    except ContainsArrayError:  # a copy of a store whose root is an array
        return zarr.open_array(store=LocalStore(str(path)), mode="r+")


def flush(root) -> None:
    if hasattr(root, "flush"):
        root.flush()


def fill_of(arr, library: str):
    """The value that marks missing data: netCDF/xarray's ``_FillValue`` attribute, else the array's fill."""
    if "_FillValue" in arr.attrs:
        v = arr.attrs["_FillValue"]
        v = fill_value_from_zarr(v, arr.dtype) if library == "zarr" else np.asarray(v).reshape(-1)[0]
        return v
    return arr.fillvalue if library == "hdf5" else arr.fill_value


def stored_bytes(arr, library: str) -> int:
    if library == "hdf5":
        return int(arr.id.get_storage_size())
    return int(arr.nbytes_stored())


def grid_of(arr, library: str) -> tuple[int, ...] | None:
    """The write unit of an array: its shards, chunks, or None (contiguous)."""
    if library == "hdf5":
        return None if arr.chunks is None else tuple(arr.chunks)
    return tuple(arr.shards or arr.chunks)


@dataclass(frozen=True)
class BlockJob:
    """Copy block ``index`` of ``stage`` from ``src`` into ``dst`` (arrays), checking within ``bound``."""

    where: str
    stage: Stage
    bound: float | None
    fill: object = None
    nan_unsafe: str | None = None
    """The codec, when its HDF5 filter crashes the process on NaN values (checked before each write)."""


def open_array(root, path: str, library: str):
    """A fresh handle of an array of the destination. HDF5: with a chunk cache of one chunk, so the
    read-back of a block reads each chunk whole once (with none, HDF5 reads an unfiltered chunk run by run:
    8-float runs of a (1460, 8, 8) pencil), and a new handle after the writer's is closed starts with an
    empty cache, so it reads the file, not the chunks just written."""
    if library != "hdf5":
        return array_at(root, path)
    import h5py
    from h5py import h5d, h5p

    ds = root[path]
    chunks = ds.chunks
    if chunks is None:
        return ds
    nbytes = int(np.prod(chunks)) * max(ds.dtype.itemsize, 1)
    del ds
    dapl = h5p.create(h5p.DATASET_ACCESS)
    dapl.set_chunk_cache(521, int(nbytes * 1.25) + 4096, 1.0)
    return h5py.Dataset(h5d.open(root.id, path.encode(), dapl=dapl))


def copy_block(job: BlockJob, index: int, src, dst_open, dst_root) -> dict:
    """Read, write, flush, read back, compare: the journal entry of the block (its largest error, bytes and
    seconds). ``dst_open()`` gives a fresh handle of the destination array (``open_array``)."""
    t0 = time.perf_counter()
    region = job.stage.region(index)
    block = src[region]
    if not isinstance(block, np.ndarray):
        block = np.asarray(block)
    if job.nan_unsafe and block.dtype.kind == "f" and np.isnan(block).any():
        raise ApplyError(f"{job.where}: the data has NaN values and hdf5plugin's {job.nan_unsafe} HDF5 filter "
                         "crashes on them: use a .zarr destination (ioadvisor's sz3 codec keeps NaN) or a "
                         "lossless codec")
    dst = dst_open()
    dst[region] = block
    del dst  # HDF5: closing the last handle writes and drops its chunk cache
    flush(dst_root)
    dst = dst_open()
    back = dst[region]
    del dst
    err = compare_block(block, np.asarray(back), bound=job.bound, fill=job.fill, where=f"{job.where} block {index}")
    return {"block": index, "nbytes": int(block.nbytes), "max_error": err, "seconds": time.perf_counter() - t0}


def data_range(src, stage: Stage, fill=None) -> float:
    """max - min of the valid values (finite, not the fill value), block by block."""
    lo, hi = np.inf, -np.inf
    for _, region in stage.regions():
        a = np.asarray(src[region])
        if a.dtype.kind == "f":
            a = a[np.isfinite(a)]
        if fill is not None:
            a = a[a != fill]
        if a.size:
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    return hi - lo if hi >= lo else 0.0


# ---------------------------------------------------------------------------- dask.distributed

_OPEN: dict = {}


def _cached(path: str, library: str, write: bool):
    key = (path, library, write)
    if key not in _OPEN:
        _OPEN[key] = open_dest(Path(path), library) if write else open_source(path, library)
    return _OPEN[key]


def remote_copy_block(spec: dict, index: int) -> dict:
    """``copy_block`` in a dask worker: opens the source (read-only) and the Zarr destination by path once
    per worker process."""
    src_root = _cached(spec["source"], spec["source_library"], False)
    dst_root = _cached(spec["dest"], "zarr", True)
    job = BlockJob(spec["array"], Stage.from_config(spec["stage"]), spec["bound"], spec["fill"])
    return copy_block(job, index, array_at(src_root, spec["source_array"]), lambda: array_at(dst_root, spec["array"]),
                      dst_root)
