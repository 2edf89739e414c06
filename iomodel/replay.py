"""Measure real runs: build a layout on disk, empty the page cache, replay accesses.

This is the ground truth the cost model is fitted to (``iomodel.calibrate``),
validated against (``benchmarks/validation/iomodel_validation.py``) and checked by
``ioadvisor verify``. h5py and zarr are imported inside the functions that use
them, so importing ``iomodel`` never needs either library (netCDF4 likewise: an HDF5
layout whose ``stack`` is "netcdf4" is built and read through netCDF4-python,
``iomodel.replay_netcdf4``).

A layout is anything with the attributes of ``iomodel.layout.Layout``:
``library`` ("hdf5" | "zarr"), ``shape``, ``dtype``, ``chunks``, and
optionally ``shards`` (zarr), ``cache`` (an ``instrumentation.records.ChunkCache``
or an object with ``rdcc_nbytes``/``rdcc_nslots``/``rdcc_w0``), ``filters``
(a sequence of ``instrumentation.records.Filter``), ``libver`` (HDF5).
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from instrumentation.records import READ, AccessRecord, Filter, ResizeRecord, Selection
from instrumentation.errors import IoadvisorError
from instrumentation.extras import require
from iomodel.replay_netcdf4 import NetCDF4StackError, NetCDF4Target, build_netcdf4

DATASET_NAME = "data"
"""Name of the one dataset inside a replay file (HDF5) or store (zarr: the root array)."""

FILL_SLAB_BYTES = 64 << 20
"""Fill the array in slabs of about this size so memory stays bounded."""


class ReplayError(IoadvisorError, ValueError):
    """The layout or a selection cannot be built or replayed; names the field."""


INDEX_LIBVER = {"btree1": ("earliest", "latest"), "farray": ("latest", "latest"),
                "earray": ("latest", "latest"), "btree2": ("latest", "latest")}
"""HDF5 file-format bounds that give each chunk index kind (fixed/extensible array or v2 B-tree by maxshape)."""


@dataclass(frozen=True)
class LayoutSpec:
    """What replay needs from a layout, read off any layout-like object.

    ``chunks`` None is an HDF5 contiguous dataset; ``rdcc`` is the HDF5 chunk
    cache (rdcc_nbytes, rdcc_nslots, rdcc_w0), None for the library default.
    ``stack``: what builds and reads an HDF5 array ("": h5py; "netcdf4": netCDF4-python, the stack of a program
    that read through netCDF-C, ``iomodel.replay_netcdf4``).
    """

    library: str
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None = None
    rdcc: tuple[int, int, float] | None = None
    filters: tuple[Filter, ...] = ()
    libver: tuple[str, str] | None = None
    maxshape: tuple[int | None, ...] | None = None
    stack: str = ""

    @classmethod
    def of(cls, layout: Any, *, dtype: Any = None, filters: Sequence[Filter] | None = None) -> "LayoutSpec":
        """Accept ``iomodel.layout.Layout`` (dtype from ``dtype`` or a float of its itemsize), or any
        object with library/shape/dtype/chunks and optionally shards, cache, filters, libver, maxshape."""
        if isinstance(layout, cls):
            return layout
        lib = getattr(layout, "library", None)
        if lib not in ("hdf5", "zarr"):
            raise ReplayError(f"layout field 'library' must be 'hdf5' or 'zarr', got {lib!r}")
        shape = tuple(int(s) for s in layout.shape)
        chunks = getattr(layout, "chunks", None)
        if chunks is None and lib == "zarr":
            chunks = shape
        if chunks is not None:
            chunks = tuple(int(c) for c in chunks)
            if len(chunks) != len(shape) or any(c <= 0 for c in chunks):
                raise ReplayError(f"layout field 'chunks' {chunks} does not fit shape {shape}")
        shards = getattr(layout, "shards", None)
        if shards is not None:
            shards = tuple(int(s) for s in shards)
            if lib != "zarr" or len(shards) != len(shape) or any(s % c for s, c in zip(shards, chunks)):
                raise ReplayError(f"layout field 'shards' {shards} must be zarr and a multiple of chunks {chunks}")
        cache = getattr(layout, "cache", None) or (layout if hasattr(layout, "rdcc_nbytes") else None)
        rdcc = None
        if cache is not None and lib == "hdf5":
            rdcc = (int(cache.rdcc_nbytes), int(cache.rdcc_nslots), float(cache.rdcc_w0))
        dt = dtype if dtype is not None else getattr(layout, "dtype", None)
        if dt is None:
            dt = f"f{int(layout.itemsize)}" if int(layout.itemsize) in (4, 8) else f"u{int(layout.itemsize)}"
        libver = getattr(layout, "libver", None)
        if libver is None and getattr(layout, "index", None) is not None:
            if layout.index not in INDEX_LIBVER:
                raise ReplayError(f"layout field 'index' must be one of {sorted(INDEX_LIBVER)}, got {layout.index!r}")
            libver = INDEX_LIBVER[layout.index]
        maxshape = getattr(layout, "maxshape", None)
        filters = tuple(filters if filters is not None else (getattr(layout, "filters", None) or ()))
        if getattr(layout, "filtered", False) and not filters:
            raise ReplayError("layout field 'filtered' is set but no filters were given to build it with")
        return cls(
            library=lib,
            shape=shape,
            dtype=np.dtype(dt).str,
            chunks=chunks,
            shards=shards,
            rdcc=rdcc,
            filters=filters,
            libver=None if libver is None else tuple(libver),
            maxshape=None if maxshape is None else tuple(maxshape),
        )


@dataclass(frozen=True)
class ReplayResult:
    """Wall times of one real replay.

    ``total_seconds`` = sum of ``per_access`` + ``close_seconds`` (HDF5 writes
    dirty chunks back when the file closes, which the model counts as write
    time); opening the file is reported apart and not included.
    """

    total_seconds: float
    per_access: np.ndarray = field(compare=False)
    open_seconds: float = 0.0
    close_seconds: float = 0.0
    evicted_files: tuple[str, ...] = ()
    stored_bytes: int = 0
    values: list[np.ndarray] | None = field(default=None, compare=False)


def data_path(spec: LayoutSpec, workdir: str | os.PathLike) -> Path:
    """Where the array of this layout lives under workdir."""
    return Path(workdir) / ("array.h5" if spec.library == "hdf5" else "array.zarr")


def files_of(path: str | os.PathLike) -> list[str]:
    """Every regular file making up the array (zarr: metadata and all chunk/shard files)."""
    p = Path(path)
    if p.is_file():
        return [str(p)]
    return sorted(str(Path(root) / f) for root, _, names in os.walk(p) for f in names)


_EVICTED_NS: dict[str, int] = {}
"""File -> wall time (ns) of its last eviction by this process."""
MTIME_SLACK_NS = 1_000_000_000
"""File times come from the kernel's coarse clock: a file written up to this long before its last
eviction is still fsynced again."""


def evict(path: str | os.PathLike) -> list[str]:
    """Drop the array's files from the OS page cache; returns the files evicted.

    fsync first (POSIX_FADV_DONTNEED only drops clean pages), but only for files modified since their last
    eviction: fsync of a clean file is still a system call that waits on the file system, which adds up to
    seconds for a zarr store of thousands of chunk files, on every repetition of a read case.
    """
    done = []
    for name in files_of(path):
        fd = os.open(name, os.O_RDONLY)
        try:
            now = time.time_ns()
            if os.fstat(fd).st_mtime_ns > _EVICTED_NS.get(name, 0) - MTIME_SLACK_NS:
                os.fsync(fd)
            _EVICTED_NS[name] = now
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        done.append(name)
    return done


def warm(path: str | os.PathLike) -> None:
    """Read every file of the array once so it sits in the page cache."""
    for name in files_of(path):
        with open(name, "rb", buffering=0) as fh:
            while fh.read(16 << 20):
                pass


def stored_bytes(path: str | os.PathLike) -> int:
    return sum(os.path.getsize(f) for f in files_of(path))


PLUGIN_FILTERS = ("zstd", "blosc", "lz4", "sz3", "zfp")
"""The HDF5 filters replay builds with hdf5plugin (an optional extra, ``ioadvisor[hdf5-filters]``)."""


def _h5_filter_kwargs(filters: Sequence[Filter]) -> dict:
    kw: dict[str, Any] = {}
    for f in filters:
        opts = f.options or {}
        if f.name == "shuffle":
            kw["shuffle"] = True
        elif f.name == "fletcher32":
            kw["fletcher32"] = True
        elif f.name in ("gzip", "lzf"):
            kw["compression"] = f.name
            if f.name == "gzip":
                kw["compression_opts"] = int(opts.get("level", 4))
        elif f.name not in PLUGIN_FILTERS:
            raise ReplayError(f"layout field 'filters': no HDF5 filter for {f.name!r}")
        else:
            require("hdf5plugin", f"the HDF5 {f.name} filter")
            import hdf5plugin  # registers the plugin filters

            makers = {
                "zstd": lambda o: hdf5plugin.Zstd(clevel=int(o.get("level", 3))),
                "blosc": lambda o: hdf5plugin.Blosc(cname=o.get("cname", "lz4"), clevel=int(o.get("clevel", 5))),
                "lz4": lambda o: hdf5plugin.LZ4(),
                "sz3": lambda o: hdf5plugin.SZ3(**{k: o[k] for k in ("absolute", "relative") if k in o}),
                "zfp": lambda o: hdf5plugin.Zfp(**{k: o[k] for k in ("accuracy", "rate", "precision") if k in o}),
            }
            kw.update(makers[f.name](opts))
    return kw


def _zarr_codecs(filters: Sequence[Filter]) -> dict:
    import zarr.codecs as zc

    compressors, serializer, shuffle = [], "auto", False
    for f in filters:
        opts = f.options or {}
        if f.name == "shuffle":
            shuffle = True
        elif f.name == "gzip":
            compressors.append(zc.GzipCodec(level=int(opts.get("level", 4))))
        elif f.name == "zstd":
            compressors.append(zc.ZstdCodec(level=int(opts.get("level", 3))))
        elif f.name in ("blosc", "lz4"):
            compressors.append(zc.BloscCodec(cname=opts.get("cname", "lz4"), clevel=int(opts.get("clevel", 5)),
                                             shuffle="shuffle" if shuffle else "noshuffle"))
        elif f.name == "zfp":
            from zarr.codecs.numcodecs import ZFPY

            serializer = ZFPY(mode=4, tolerance=float(opts.get("accuracy", opts.get("tolerance", 1e-3))))
        elif f.name in ("bytes", "sharding_indexed"):
            continue
        else:
            raise ReplayError(f"layout field 'filters': no zarr codec for {f.name!r}")
    return {"compressors": compressors or None, "serializer": serializer}


def _fill_values(spec: LayoutSpec, lo: int, hi: int, rng: np.random.Generator) -> np.ndarray:
    shape = (hi - lo,) + spec.shape[1:]
    dt = np.dtype(spec.dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape, dtype=np.float64).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -(1 << 30)), min(info.max, 1 << 30), size=shape, dtype=dt)
    raise ReplayError(f"layout field 'dtype': cannot fill {dt}")


def _fill(arr, spec: LayoutSpec, data: np.ndarray | None) -> None:
    """Write every element (random values, or ``data``), in chunk-aligned slabs along axis 0."""
    if data is not None:
        arr[...] = data
        return
    rng = np.random.default_rng(0)
    row_bytes = int(np.prod(spec.shape[1:], dtype=np.int64)) * np.dtype(spec.dtype).itemsize
    step = (spec.shards or spec.chunks or (1,))[0]
    rows = max(step, (FILL_SLAB_BYTES // max(row_bytes, 1)) // step * step)
    for lo in range(0, spec.shape[0], rows):
        hi = min(spec.shape[0], lo + rows)
        arr[lo:hi] = _fill_values(spec, lo, hi, rng)


def build(layout: Any, workdir: str | os.PathLike, *, fill: bool = True, data: np.ndarray | None = None,
          shape: Sequence[int] | None = None, resizable: bool = False, dtype: Any = None,
          filters: Sequence[Filter] | None = None, create_kwargs: dict | None = None) -> Path:
    """Create the array of ``layout`` under ``workdir`` (replacing any old one); returns its path.

    ``fill``: write every element (``data`` or random values) so every chunk
    exists; otherwise chunks stay unallocated (reads give the fill value,
    first writes need no read). ``shape`` overrides the initial extent (for
    traces that grow the array); ``resizable`` makes every HDF5 dimension
    unlimited (unless the layout has a maxshape). ``dtype``/``filters``: see ``LayoutSpec.of``.
    ``create_kwargs``: the library's own compression arguments (h5py ``create_dataset``, netCDF4 ``createVariable``
    when ``spec.stack`` is "netcdf4", or
    ``zarr.create_array`` kwargs, e.g. from ``compression_model.codecs``), instead of ``filters``.
    """
    spec = LayoutSpec.of(layout, dtype=dtype, filters=filters)
    path = data_path(spec, workdir)
    Path(workdir).mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    shape = tuple(int(s) for s in (shape if shape is not None else spec.shape))
    if data is not None:
        if data.ndim != len(shape) or any(d < s for d, s in zip(data.shape, shape)):
            raise ReplayError(f"data shape {data.shape} does not cover layout shape {shape}")
        data = data[tuple(slice(0, s) for s in shape)]
    if spec.library == "hdf5" and spec.stack == "netcdf4":
        try:
            build_netcdf4(spec, path, shape, name=DATASET_NAME, data=data, fill=fill, create_kwargs=create_kwargs,
                          slab_bytes=FILL_SLAB_BYTES)
        except NetCDF4StackError as exc:
            raise ReplayError(str(exc)) from None
    elif spec.library == "hdf5":
        import h5py

        kw = create_kwargs if create_kwargs is not None else _h5_filter_kwargs(spec.filters)
        libver = spec.libver or ("earliest", "latest")
        with h5py.File(path, "w", libver=libver) as f:
            maxshape = spec.maxshape or ((None,) * len(shape) if resizable else None)
            if spec.chunks is None:
                # h5py chunks any dataset given a maxshape (traces record one for every array: its shape
                # when fixed, None dimensions for zarr's); contiguous storage holds a fixed extent
                if resizable:
                    raise ReplayError(f"contiguous storage cannot grow: the accesses resize the array {shape}")
                maxshape = None
            # no explicit fillvalue: h5py users rarely set one, and a user-defined fill value changes
            # how HDF5 writes never-allocated chunks (cached path instead of direct)
            ds = f.create_dataset(DATASET_NAME, shape=shape, dtype=spec.dtype, chunks=spec.chunks,
                                  maxshape=maxshape, **kw)
            if fill:
                _fill(ds, spec, data)
    else:
        import zarr

        arr = zarr.create_array(store=str(path), shape=shape, dtype=spec.dtype, chunks=spec.chunks,
                                shards=spec.shards, fill_value=0, zarr_format=3,
                                **(create_kwargs if create_kwargs is not None else _zarr_codecs(spec.filters)))
        if fill:
            _fill(arr, spec, data)
    return path


def index_of(sel: Selection) -> tuple[str, Any]:
    """The selection as a library-neutral index: ("basic", slices) | ("orthogonal", arrays) | ("points", coords)."""
    if sel.kind == "points":
        return "points", tuple(np.asarray(sel.points, dtype=np.int64).T)
    if sel.kind == "hyperslab" and all(c == 1 or b == 1 for c, b in zip(sel.count, sel.block)):
        key = tuple(
            slice(s, s + b) if c == 1 else slice(s, s + st * (c - 1) + 1, st)
            for s, c, st, b in zip(sel.start, sel.count, sel.stride, sel.block)
        )
        return "basic", key
    return "orthogonal", tuple(sel.dim_indices(d) for d in range(sel.ndim))


class _H5Target:
    """One HDF5 dataset opened with the layout's chunk cache."""

    def __init__(self, path: Path, spec: LayoutSpec, writable: bool = True):
        import h5py

        self._h5py = h5py
        kw = {}
        if spec.rdcc is not None:
            kw = dict(rdcc_nbytes=spec.rdcc[0], rdcc_nslots=spec.rdcc[1], rdcc_w0=spec.rdcc[2])
        # read-only as a reading program opens it: cold reads of a file opened "r+" took 1.7x as long (3000
        # 64-row reads of 512x128 chunks without a cache, benchmarks/validation/realsize.py r02's recipe against verify)
        self.file = h5py.File(path, "r+" if writable else "r", **kw)
        self.ds = self.file[DATASET_NAME]

    @staticmethod
    def _high_level(kind: str, key):
        """The key for ``Dataset.__getitem__`` (what users call), or None if h5py cannot take it."""
        if kind == "basic":
            return key
        if kind == "orthogonal":
            hkey = tuple(_h5_orth(k) for k in key)
            if sum(isinstance(k, np.ndarray) for k in hkey) <= 1:
                return hkey
        return None

    def _spaces(self, kind: str, key, sel: Selection):
        # h5py's high-level indexing takes one index list only; build the dataspaces ourselves
        h5s = self._h5py.h5s
        fspace = self.ds.id.get_space()
        if kind == "points":
            coords = np.stack(key, axis=1)
            fspace.select_elements(coords)
            return h5s.create_simple((len(coords),)), fspace, (len(coords),)
        if sel.kind == "hyperslab":
            fspace.select_hyperslab(sel.start, sel.count, sel.stride, sel.block)
            shape = sel.shape
        else:
            fspace.select_none()
            runs = [_runs(ix) for ix in key]
            for combo in np.ndindex(*[len(r) for r in runs]):
                start = tuple(runs[d][i][0] for d, i in enumerate(combo))
                block = tuple(runs[d][i][1] for d, i in enumerate(combo))
                fspace.select_hyperslab(start, (1,) * len(start), block=block, op=h5s.SELECT_OR)
            shape = tuple(len(ix) for ix in key)
        return h5s.create_simple(shape), fspace, shape

    def read(self, kind: str, key, sel: Selection) -> np.ndarray:
        hkey = self._high_level(kind, key)
        if hkey is not None:
            return self.ds[hkey]
        mspace, fspace, shape = self._spaces(kind, key, sel)
        out = np.empty(shape, dtype=self.ds.dtype)
        self.ds.id.read(mspace, fspace, out)
        return out

    def write(self, kind: str, key, sel: Selection, values: np.ndarray) -> None:
        hkey = self._high_level(kind, key)
        if hkey is not None:
            self.ds[hkey] = values
            return
        mspace, fspace, _ = self._spaces(kind, key, sel)
        self.ds.id.write(mspace, fspace, np.ascontiguousarray(values))

    def resize(self, shape) -> None:
        self.ds.resize(shape)

    def close(self) -> None:
        self.file.close()

    def reopen(self) -> None:
        """Close the dataset and open it again: HDF5 frees a dataset's chunk cache at its close, so the reads after
        a program's reopen start with an empty one (``Reopen``)."""
        self.ds = None  # the only handle: dropping it closes the dataset
        self.ds = self.file[DATASET_NAME]


def _runs(ix: np.ndarray) -> list[tuple[int, int]]:
    """Sorted unique indices as (start, length) runs."""
    if len(ix) == 0:
        return []
    breaks = np.flatnonzero(np.diff(ix) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(ix)]])
    return [(int(ix[s]), int(e - s)) for s, e in zip(starts, ends)]


def _h5_orth(ix: np.ndarray):
    runs = _runs(ix)
    if len(runs) == 1:
        return slice(runs[0][0], runs[0][0] + runs[0][1])
    return ix


class _ZarrTarget:
    def __init__(self, path: Path, spec: LayoutSpec):
        import zarr

        self.arr = zarr.open_array(str(path), mode="r+")

    def read(self, kind: str, key, sel: Selection) -> np.ndarray:
        if kind == "basic":
            return self.arr[key]
        if kind == "orthogonal":
            return self.arr.oindex[key]
        return self.arr.vindex[key]

    def write(self, kind: str, key, sel: Selection, values: np.ndarray) -> None:
        if kind == "basic":
            self.arr[key] = values
        elif kind == "orthogonal":
            self.arr.oindex[key] = values
        else:
            self.arr.vindex[key] = values

    def resize(self, shape) -> None:
        self.arr.resize(shape)

    def close(self) -> None:
        pass

    def reopen(self) -> None:
        """Nothing to empty: zarr keeps no chunk cache between calls."""


def _open(path: Path, spec: LayoutSpec, writable: bool = True):
    if spec.library == "hdf5" and spec.stack == "netcdf4":
        return NetCDF4Target(path, spec, DATASET_NAME, writable)
    return _H5Target(path, spec, writable) if spec.library == "hdf5" else _ZarrTarget(path, spec)


def _write_values(spec: LayoutSpec, kind: str, key, sel: Selection, data: np.ndarray | None,
                  rng: np.random.Generator) -> np.ndarray:
    if data is not None:
        if kind == "basic":
            return np.ascontiguousarray(data[key])
        if kind == "orthogonal":
            return np.ascontiguousarray(data[np.ix_(*key)])
        return np.ascontiguousarray(data[key])
    shape = sel.shape if kind != "orthogonal" else tuple(len(k) for k in key)
    return rng.standard_normal(shape).astype(spec.dtype)


@dataclass(frozen=True)
class Reopen:
    """An event of ``replay``: the program closed the array (or its file) here and opened it again, so the accesses
    after it start with an empty chunk cache (the trace's open and close records, ``instrumentation.opens``)."""


@dataclass(frozen=True)
class RunOptions:
    """How ``replay`` runs the accesses for real.

    ``cold``: evict every file of the array from the page cache before the first access; False: read them
    all once (warm); None: leave the page cache as it is (a replay process of ``advisor.verify`` whose parent
    emptied it once for all the processes replayed at the same time). ``fill``: fill the array when building it (with ``data`` or random values).
    ``initial_shape``: the shape it is built with (appends grow it). ``keep_values`` keeps what each read
    returned (tests). ``rebuild=False`` reuses the array an earlier replay of the same layout left in the work
    directory (several read patterns on one filled array). ``dtype``/``filters`` complete a layout that lacks
    them (``iomodel.layout.Layout`` has an itemsize and a ``filtered`` flag only)."""

    cold: bool | None = True
    fill: bool = True
    initial_shape: Sequence[int] | None = None
    keep_values: bool = False
    rebuild: bool = True
    dtype: Any = None
    filters: Sequence[Filter] | None = None


def replay(accesses: Iterable[AccessRecord | ResizeRecord], layout: Any, workdir: str | os.PathLike,
           options: RunOptions | None = None, *, data: np.ndarray | None = None, **kw) -> ReplayResult:
    """Build ``layout`` under ``workdir``, empty (or fill) the page cache, run the accesses for real.

    ``accesses`` are AccessRecords (their ``selection`` and ``op``; the
    dataset id is ignored: one array) and ResizeRecords, in order. ``data``
    is the array's content (default: random values) and the source of
    written values. ``options`` (or its fields as keyword arguments):
    ``RunOptions``.
    """
    opts = replace(options or RunOptions(), **kw)
    spec = LayoutSpec.of(layout, dtype=opts.dtype, filters=opts.filters)
    events = list(accesses)
    resizable = any(isinstance(e, ResizeRecord) for e in events)
    path = data_path(spec, workdir)
    if opts.rebuild or not path.exists():
        build(spec, workdir, fill=opts.fill, data=data, shape=opts.initial_shape, resizable=resizable)
    prepared = []
    rng = np.random.default_rng(1)
    for e in events:
        if isinstance(e, ResizeRecord):
            prepared.append(("resize", e.shape, None, None))
            continue
        if isinstance(e, Reopen):
            prepared.append(("reopen", None, None, None))
            continue
        kind, key = index_of(e.selection)
        values = None if e.op == READ else _write_values(spec, kind, key, e.selection, data, rng)
        prepared.append((kind, key, e.selection, values))
    evicted: tuple[str, ...] = ()
    if opts.cold:
        evicted = tuple(evict(path))
    elif opts.cold is not None:
        warm(path)
    t = time.perf_counter()
    target = _open(path, spec, writable=any(p[0] == "resize" or p[3] is not None for p in prepared))
    open_s = time.perf_counter() - t
    per = np.zeros(sum(1 for p in prepared if p[0] not in ("resize", "reopen")))
    kept: list[np.ndarray] | None = [] if opts.keep_values else None
    clock = time.perf_counter
    i = 0
    try:
        for kind, key, sel, values in prepared:
            if kind == "resize":
                target.resize(key)
                continue
            if kind == "reopen":  # not timed: the program's own open is outside its traced calls
                target.reopen()
                continue
            if values is None:
                t = clock()
                out = target.read(kind, key, sel)
                per[i] = clock() - t
                if kept is not None:
                    kept.append(out)
            else:
                t = clock()
                target.write(kind, key, sel, values)
                per[i] = clock() - t
            i += 1
    except NetCDF4StackError as exc:  # a point selection or a resize netCDF4 cannot replay
        raise ReplayError(str(exc)) from None
    finally:
        t = clock()
        target.close()
        close_s = clock() - t
    return ReplayResult(
        total_seconds=float(per.sum() + close_s),
        per_access=per,
        open_seconds=open_s,
        close_seconds=close_s,
        evicted_files=evicted,
        stored_bytes=stored_bytes(path),
        values=kept,
    )


__all__ = ["LayoutSpec", "Reopen", "ReplayError", "ReplayResult", "RunOptions", "build", "data_path", "evict", "files_of",
           "index_of", "replay", "stored_bytes", "warm"]
