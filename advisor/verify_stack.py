"""The stack ``advisor.verify`` builds and replays a dataset's layouts through: the program's own.

A program that read an HDF5 dataset through netCDF4-python (netCDF-C; xarray's default engine) keeps that stack
once the recipe is applied (``advisor.idiom.xarray_code``: ``to_netcdf`` with the netCDF4 engine, the chunk cache
set with ``set_var_chunk_cache`` when the recommendation names one). So its layouts are written by netCDF-C and read
through netCDF4's ``Variable`` indexing (``iomodel.replay_netcdf4``). Every other dataset, and a layout netCDF4
cannot write (zarr, a codec outside ``NETCDF4_CODECS``), a point selection or a resize, stays on h5py / zarr.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from advisor.idiom import NETCDF4_CODECS, read_through_netcdf4
from advisor.verify_results import Choice
from instrumentation.records import DatasetRecord
from instrumentation.tracefile import Trace
from iomodel.replay_netcdf4 import netcdf4_filter_kwargs

NETCDF4_STACK = "netcdf4"


def program_stack(trace: Trace, ds: DatasetRecord) -> str:
    """``NETCDF4_STACK`` when the program read ``ds`` through netCDF4-python and netCDF4 can replay what it did
    (no point selection, no resize of its fixed dimensions), else "" (h5py / zarr)."""
    libraries = [x for h in trace.headers for x in h.libraries]
    if not read_through_netcdf4(ds, libraries):
        return ""
    if any(r.dataset == ds.id for r in trace.resizes):
        return ""
    if any(a.selection.kind == "points" for a in trace.accesses_of(ds.id)):
        return ""
    return NETCDF4_STACK


def netcdf4_writes(choice: Choice) -> bool:
    """netCDF4-python can write this layout: HDF5, and no codec or one it writes itself (the recorded filters
    of the current layout included)."""
    if choice.layout.library != "hdf5" or choice.error_bound:
        return False
    if choice.compressor and choice.compressor != "none" and choice.compressor not in NETCDF4_CODECS:
        return False
    return not choice.filters or netcdf4_filter_kwargs(choice.filters) is not None


def on_program_stack(trace: Trace, ds: DatasetRecord, choices: Sequence[Choice]) -> list[Choice]:
    """The choices, each to be built and replayed through the program's stack where it can be."""
    stack = program_stack(trace, ds)
    if not stack:
        return list(choices)
    return [replace(c, stack=stack) if netcdf4_writes(c) else c for c in choices]


def netcdf4_create_kwargs(choice: Choice) -> dict | None:
    """``createVariable``'s compression keywords: a candidate's codec as xarray's netCDF4 backend writes the recipe's
    encoding (``compression`` named; its defaults complevel 4 and shuffle on), the current layout's recorded
    filters, or none."""
    if choice.compressor and choice.compressor != "none":
        return {"compression": NETCDF4_CODECS[choice.compressor], "complevel": 4, "shuffle": True}
    if choice.filters:
        return netcdf4_filter_kwargs(choice.filters)
    return {}


__all__ = ["NETCDF4_STACK", "netcdf4_create_kwargs", "netcdf4_writes", "on_program_stack", "program_stack"]
