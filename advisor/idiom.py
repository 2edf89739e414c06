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
import os
from dataclasses import dataclass
from typing import Sequence

from instrumentation.records import DatasetRecord


@dataclass(frozen=True)
class Idiom:
    """How the array was written: ``netcdf4`` (HDF5) or ``xarray-zarr``, with its variable and dimensions."""

    kind: str
    variable: str
    dims: tuple[str, ...]

    def get_config(self) -> dict:
        return {"kind": self.kind, "variable": self.variable, "dims": list(self.dims)}

    @classmethod
    def from_config(cls, c: dict) -> "Idiom":
        return cls(c["kind"], c["variable"], tuple(c["dims"]))


def _name(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def detect(ds: DatasetRecord) -> Idiom | None:
    """The idiom of a traced array, from its metadata (None when plain h5py/zarr or unreadable)."""
    if ds.file.startswith(("memory://", "<")) or not os.path.exists(ds.file):
        return None
    variable = ds.path.strip("/").split("/")[-1] or "data"
    try:
        if ds.library == "hdf5":
            import h5py

            with h5py.File(ds.file, "r") as f:
                obj = f[ds.path]
                attrs = obj.attrs
                if "DIMENSION_LIST" not in attrs and "_Netcdf4Dimid" not in attrs:
                    return None
                if "DIMENSION_LIST" in attrs:  # netCDF names a dimension scale dataset after its dimension
                    dims = [f[refs[0]].name.split("/")[-1] for refs in attrs["DIMENSION_LIST"]]
                else:  # a dimension scale itself (a coordinate variable)
                    dims = [variable]
                return Idiom("netcdf4", variable, tuple(dims))
        import zarr

        arr = zarr.open_array(store=ds.file, path=ds.path, mode="r")
        dims = arr.attrs.get("_ARRAY_DIMENSIONS") or getattr(arr.metadata, "dimension_names", None)
        if not dims or any(d is None for d in dims):
            return None
        return Idiom("xarray-zarr", variable, tuple(_name(d) for d in dims))
    except Exception:  # noqa: BLE001 - metadata we cannot read means: no idiom, the plain code stands
        return None


def dask_chunks(chunks: Sequence[int] | None, shape: Sequence[int], blocking: Sequence[int] | None) -> tuple[int, ...]:
    """Dask chunks that hold whole storage chunks: the program's blocks rounded up to a multiple of the
    storage chunk (else the storage chunk), at most the array."""
    if chunks is None:
        return tuple(blocking) if blocking is not None else tuple(shape)
    base = blocking if blocking is not None else chunks
    return tuple(min(s, math.ceil(b / c) * c) for b, c, s in zip(base, chunks, shape))


def xarray_code(idiom: Idiom, library: str, chunks: Sequence[int] | None, shards: Sequence[int] | None,
                shape: Sequence[int], blocking: Sequence[int] | None, compressed: bool) -> str:
    """``ds.to_netcdf``/``ds.to_zarr`` with the recommended encoding, and the matching ``open_dataset``."""
    v = idiom.variable
    dims = idiom.dims if len(idiom.dims) == len(shape) else tuple(f"dim_{i}" for i in range(len(shape)))
    dask = dict(zip(dims, dask_chunks(chunks, shape, blocking)))
    lines = ["import xarray as xr"]
    if library == "hdf5":
        enc = {"chunksizes": tuple(chunks)} if chunks is not None else {"contiguous": True}
        lines.append(f"ds.to_netcdf(\"out.nc\", engine=\"h5netcdf\", encoding={{{v!r}: {enc!r}}})")
        lines.append(f"ds = xr.open_dataset(\"out.nc\", engine=\"h5netcdf\", chunks={dask!r})")
    else:
        enc = {"chunks": tuple(chunks)}
        if shards is not None:
            enc["shards"] = tuple(shards)
        lines.append(f"ds.to_zarr(\"out.zarr\", encoding={{{v!r}: {enc!r}}}, zarr_format=3)")
        lines.append(f"ds = xr.open_dataset(\"out.zarr\", engine=\"zarr\", chunks={dask!r})")
    if compressed:
        lines.append("# the compressor: add the codec arguments of the h5py/zarr form above to the encoding")
    return "\n".join(lines)


__all__ = ["Idiom", "dask_chunks", "detect", "xarray_code"]
