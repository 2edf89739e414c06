"""Replay through netCDF4-python: the stack of a program that read its HDF5 dataset through netCDF-C (netCDF4-python,
xarray's default engine), for ``iomodel.replay`` when ``LayoutSpec.stack`` is "netcdf4" (``spec`` below is its
``LayoutSpec``).

The array is built the way ``xarray``'s netCDF4 backend writes a variable (``createVariable`` with ``chunksizes``
or ``contiguous``, and the compression netCDF4-python writes itself), so the file is netCDF-C's, not h5py's; it is
read back through ``Variable`` indexing with masking off (as xarray opens it), after ``set_var_chunk_cache`` with the
layout's cache when it has one (a recipe that sets none leaves netCDF-C's default). netCDF4 is imported inside the
functions, so importing ``iomodel`` never needs it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from instrumentation.errors import IoadvisorError
from instrumentation.records import Filter, Selection


class NetCDF4StackError(IoadvisorError, ValueError):
    """netCDF4-python cannot write or read what was asked (``iomodel.replay`` raises it as its ``ReplayError``)."""


NETCDF4_FILTERS = {"gzip": "zlib", "deflate": "zlib", "zstd": "zstd", "bzip2": "bzip2", "szip": "szip"}
"""Recorded HDF5 filter names -> netCDF4-python's ``compression``."""


def netcdf4_filter_kwargs(filters: Sequence[Filter]) -> dict | None:
    """``createVariable`` keywords for a recorded filter pipeline; None when netCDF4-python cannot write one of the
    filters (the layout is then built and replayed through h5py)."""
    kw: dict = {"shuffle": False}
    for f in filters:
        opts = f.options or {}
        if f.name == "shuffle":
            kw["shuffle"] = True
        elif f.name == "fletcher32":
            kw["fletcher32"] = True
        elif f.name in NETCDF4_FILTERS:
            kw["compression"] = NETCDF4_FILTERS[f.name]
            if "level" in opts:
                kw["complevel"] = int(opts["level"])
        elif f.name == "blosc" and opts.get("cname", "lz4") in ("lz4", "lz4hc", "blosclz", "zstd", "zlib"):
            kw["compression"] = f"blosc_{opts.get('cname', 'lz4')}"
        else:
            return None
    return kw


def build_netcdf4(spec, path: Path, shape: Sequence[int], *, name: str, data: np.ndarray | None, fill: bool,
                  create_kwargs: dict | None = None, slab_bytes: int = 64 << 20) -> Path:
    """Create ``path`` (netCDF-4) holding the variable ``name`` of ``spec`` (an ``iomodel.replay.LayoutSpec``) over
    dimensions ``dim_i``, unlimited where ``spec.maxshape`` is None and the array is filled; every element written when
    ``fill`` (``data``, else random values in slabs of about ``slab_bytes``).
    ``create_kwargs``: ``createVariable``'s compression keywords (default: from ``spec.filters``)."""
    import netCDF4

    kw = dict(create_kwargs) if create_kwargs is not None else netcdf4_filter_kwargs(spec.filters)
    if kw is None:
        raise NetCDF4StackError(f"layout field 'filters': netCDF4-python cannot write {[f.name for f in spec.filters]}")
    if spec.chunks is None:
        kw["contiguous"] = True
    else:
        kw["chunksizes"] = tuple(spec.chunks)
    if not fill:
        kw["fill_value"] = np.zeros((), dtype=spec.dtype)[()]  # unwritten elements read 0, as h5py's build gives
    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        dims = []
        for i, n in enumerate(shape):
            # an unlimited dimension where the file had one (xarray keeps a source's unlimited_dims when it
            # writes the recipe); grown by the fill, so only for an array written whole
            unlimited = fill and spec.maxshape is not None and spec.maxshape[i] is None
            dims.append(nc.createDimension(f"dim_{i}", None if unlimited else int(n)).name)
        var = nc.createVariable(name, np.dtype(spec.dtype), tuple(dims), **kw)
        var.set_auto_maskandscale(False)
        if fill:
            _fill(var, spec, shape, data, slab_bytes)
    return path


def _fill(var, spec, shape: Sequence[int], data: np.ndarray | None, slab_bytes: int) -> None:
    if data is not None:
        var[...] = np.ascontiguousarray(data)
        return
    rng = np.random.default_rng(0)
    dt = np.dtype(spec.dtype)
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dt.itemsize
    step = (spec.chunks or (1,))[0]
    rows = max(step, (slab_bytes // max(row_bytes, 1)) // step * step)
    for lo in range(0, shape[0], rows):
        hi = min(shape[0], lo + rows)
        var[lo:hi] = rng.standard_normal((hi - lo,) + tuple(shape[1:])).astype(dt)


class NetCDF4Target:
    """The variable opened through netCDF4-python, with the layout's chunk cache when it sets one."""

    def __init__(self, path: Path, spec, name: str, writable: bool = False):
        self._args = (path, spec, name, writable)
        self._open(*self._args)

    def _open(self, path: Path, spec, name: str, writable: bool) -> None:
        import netCDF4

        self.nc = netCDF4.Dataset(str(path), "a" if writable else "r")
        self.var = self.nc[name]
        self.var.set_auto_maskandscale(False)  # as xarray's netCDF4 backend opens a variable
        if spec.rdcc is not None and spec.chunks is not None:
            self.var.set_var_chunk_cache(size=spec.rdcc[0], nelems=spec.rdcc[1], preemption=spec.rdcc[2])

    @staticmethod
    def _key(kind: str, key):
        if kind == "points":  # netCDF4-python has no point selection
            raise NetCDF4StackError("selection 'points': netCDF4-python cannot read a point selection")
        return key  # slices; index arrays per axis, which netCDF4 takes orthogonally

    def read(self, kind: str, key, sel: Selection) -> np.ndarray:
        return np.asarray(self.var[self._key(kind, key)])

    def write(self, kind: str, key, sel: Selection, values: np.ndarray) -> None:
        self.var[self._key(kind, key)] = values

    def resize(self, shape) -> None:
        raise NetCDF4StackError("resize: a netCDF variable of fixed dimensions cannot be resized")

    def close(self) -> None:
        self.nc.close()

    def reopen(self) -> None:
        """Close the file and open it again, as the program did (netCDF-C keeps a variable's HDF5 dataset, and so
        its chunk cache, until the file closes)."""
        self.nc.close()
        self._open(*self._args)


__all__ = ["NETCDF4_FILTERS", "NetCDF4StackError", "NetCDF4Target", "build_netcdf4", "netcdf4_filter_kwargs"]
