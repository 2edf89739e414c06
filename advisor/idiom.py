"""The user's own idiom: netCDF-4 files and xarray-written Zarr stores get the xarray form of the advice.

A netCDF-4 variable is an HDF5 dataset with dimension scales (``DIMENSION_LIST``)
or a ``_Netcdf4Dimid`` attribute; xarray writes a Zarr array's dimension names
as ``_ARRAY_DIMENSIONS`` (Zarr format 2) or ``dimension_names`` (format 3). For
those, the advice also prints ``ds.to_netcdf(..., engine="h5netcdf",
encoding=...)`` / ``ds.to_zarr(..., encoding=...)`` and the dask chunks that
match the recommended chunks (and the program's own blocks, when it reads in
blocks).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from instrumentation.opener import open_recorded
from instrumentation.records import DatasetRecord


NETCDF4_CODECS = {"gzip": "zlib", "zstd": "zstd", "blosc-zstd": "blosc_zstd", "blosc-lz4": "blosc_lz4"}
"""The compressors netCDF4-python writes itself (``createVariable(compression=...)``, ``to_netcdf`` encoding):
a program on netCDF4-python keeps its library only with these."""


@dataclass(frozen=True)
class Idiom:
    """How the array was written: ``netcdf4`` (HDF5) or ``xarray-zarr``, with its variable and dimensions;
    ``engine``: the library the program read it with (``netcdf4``: netCDF4-python, the default engine of
    xarray; ``h5netcdf``: through h5py; ``zarr``); ``dask``: the program read it in dask blocks."""

    kind: str
    variable: str
    dims: tuple[str, ...]
    engine: str = ""
    dask: bool = True

    def get_config(self) -> dict:
        return {"kind": self.kind, "variable": self.variable, "dims": list(self.dims), "engine": self.engine,
                "dask": self.dask}

    @classmethod
    def from_config(cls, c: dict) -> "Idiom":
        return cls(c["kind"], c["variable"], tuple(c["dims"]), c.get("engine", ""), bool(c.get("dask", True)))


def read_through_netcdf4(ds: DatasetRecord, libraries: Sequence[str]) -> bool:
    """The program reached this HDF5 dataset through netCDF4-python's own libhdf5 (the interposer names the copy
    it recorded each call through: ``TraceHeader.libraries``)."""
    lib = ds.library_version.rsplit("(", 1)[-1].rstrip(")").strip() if "(" in ds.library_version else ""
    return ds.library == "hdf5" and any("netcdf4" in p.lower() and (not lib or lib in p) for p in libraries)


def _name(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def detect(ds: DatasetRecord, libraries: Sequence[str] = (), dask: bool = True) -> Idiom | None:
    """The idiom of a traced array, from its metadata (None when plain h5py/zarr or unreadable); ``libraries``:
    the trace's libhdf5 copies (netCDF4-python's means the default engine), ``dask``: read in dask blocks."""
    idiom = _detect(ds)
    if idiom is None:
        return None
    engine = "zarr" if ds.library == "zarr" else "netcdf4" if read_through_netcdf4(ds, libraries) else "h5netcdf"
    return Idiom(idiom.kind, idiom.variable, idiom.dims, engine, dask)


def _detect(ds: DatasetRecord) -> Idiom | None:
    variable = ds.path.strip("/").split("/")[-1] or "data"
    try:
        with open_recorded(ds) as opened:
            arr = opened.array
            if opened.library == "hdf5":
                attrs = arr.attrs
                if "DIMENSION_LIST" not in attrs and "_Netcdf4Dimid" not in attrs:
                    return None
                if "DIMENSION_LIST" in attrs:  # netCDF names a dimension scale dataset after its dimension
                    dims = [opened.file[refs[0]].name.split("/")[-1] for refs in attrs["DIMENSION_LIST"]]
                else:  # a dimension scale itself (a coordinate variable)
                    dims = [variable]
                return Idiom("netcdf4", variable, tuple(dims))
            dims = arr.attrs.get("_ARRAY_DIMENSIONS") or getattr(arr.metadata, "dimension_names", None)
            if not dims or any(d is None for d in dims):
                return None
            return Idiom("xarray-zarr", variable, tuple(_name(d) for d in dims))
    except Exception:  # noqa: BLE001 - a file not here, or metadata we cannot read: no idiom, the plain code stands
        return None


def dask_chunks(chunks: Sequence[int] | None, shape: Sequence[int], blocking: Sequence[int] | None) -> tuple[int, ...]:
    """Dask chunks that hold whole storage chunks: the program's blocks rounded up to a multiple of the
    storage chunk (else the storage chunk), at most the array."""
    if chunks is None:
        return tuple(blocking) if blocking is not None else tuple(shape)
    base = blocking if blocking is not None else chunks
    return tuple(min(s, math.ceil(b / c) * c) for b, c, s in zip(base, chunks, shape))


def _as_entries(keywords: str) -> str:
    """``create_dataset`` keyword source (``compression="gzip", compression_opts=4`` or ``**hdf5plugin.X(...)``)
    as dict entries."""
    if keywords.startswith("**"):
        return keywords
    return re.sub(r"(?:^|(?<=, ))(\w+)=", lambda m: f"{m.group(1)!r}: ", keywords)


def xarray_code(idiom: Idiom, library: str, chunks: Sequence[int] | None, shards: Sequence[int] | None,
                shape: Sequence[int], blocking: Sequence[int] | None, compressed: bool,
                cache: tuple[int, int] | None = None, compressor: str | None = None,
                h5py_filter: str | None = None) -> str:
    """``ds.to_netcdf``/``ds.to_zarr`` with the recommended encoding, and the matching ``open_dataset`` in the
    program's own stack: its engine (netCDF4-python stays the default engine), the chunk cache set with that
    engine's API (``cache``: rdcc bytes and slots, None: the library's default), dask chunks only when the
    program read in dask blocks (``idiom.dask``). ``h5py_filter``: the compressor as ``create_dataset`` keywords
    (``advisor.render.code.hdf5_codec_source``), which h5netcdf's encoding takes as they are."""
    v = idiom.variable
    dims = idiom.dims if len(idiom.dims) == len(shape) else tuple(f"dim_{i}" for i in range(len(shape)))
    dask = dict(zip(dims, dask_chunks(chunks, shape, blocking)))
    chunk_kw = f", chunks={dask!r}" if idiom.dask else ""
    lines = ["import xarray as xr"]
    if library == "hdf5" and idiom.engine == "netcdf4":  # netCDF4-python, xarray's default engine
        enc = {"chunksizes": tuple(chunks)} if chunks is not None else {"contiguous": True}
        if compressor in NETCDF4_CODECS:
            enc["compression"] = NETCDF4_CODECS[compressor]
            compressed = False
        lines.append(f"ds.to_netcdf(\"out.nc\", encoding={{{v!r}: {enc!r}}})")
        if cache is not None and chunks is not None:
            lines += ["import netCDF4",
                      "nc = netCDF4.Dataset(\"out.nc\")",
                      f"nc[{v!r}].set_var_chunk_cache(size={cache[0]}, nelems={cache[1]}, preemption=0.75)",
                      f"ds = xr.open_dataset(xr.backends.NetCDF4DataStore(nc){chunk_kw})"]
        else:
            lines.append(f"ds = xr.open_dataset(\"out.nc\"{chunk_kw})")
    elif library == "hdf5":
        enc = {"chunksizes": tuple(chunks)} if chunks is not None else {"contiguous": True}
        text = repr(enc)
        if h5py_filter and chunks is not None:  # the filter in the encoding, as create_dataset takes it
            text = text[:-1] + ", " + _as_entries(h5py_filter) + "}"
            if "hdf5plugin." in h5py_filter:
                lines.append("import hdf5plugin")
            compressed = False
        lines.append(f"ds.to_netcdf(\"out.nc\", engine=\"h5netcdf\", encoding={{{v!r}: {text}}})")
        cache_kw = ""
        if cache is not None and chunks is not None:
            cache_kw = f", driver_kwds={{'rdcc_nbytes': {cache[0]}, 'rdcc_nslots': {cache[1]}}}"
        lines.append(f"ds = xr.open_dataset(\"out.nc\", engine=\"h5netcdf\"{chunk_kw}{cache_kw})")
    else:
        enc = {"chunks": tuple(chunks)}
        if shards is not None:
            enc["shards"] = tuple(shards)
        lines.append(f"ds.to_zarr(\"out.zarr\", encoding={{{v!r}: {enc!r}}}, zarr_format=3)")
        lines.append(f"ds = xr.open_dataset(\"out.zarr\", engine=\"zarr\"{chunk_kw})")
    if compressed:
        lines.append("# the compressor: add the codec arguments of the h5py/zarr form above to the encoding")
    return "\n".join(lines)


__all__ = ["Idiom", "NETCDF4_CODECS", "dask_chunks", "detect", "read_through_netcdf4", "xarray_code"]
