"""Recognise input files the tracer did not see into: netCDF-3, and HDF5 files no h5py call reached.

xarray and netCDF4 read netCDF-3 through netCDF-C or scipy, not HDF5, and
netCDF-4 (HDF5) files through netCDF-C's own libhdf5 (xarray's default
``netcdf4`` engine): a trace of such a program holds no dataset of the file.
The files named on the traced command line are sniffed by their signature, so
``trace show`` and ``advise`` can say what was read instead of only "no
accesses recorded".
"""
from __future__ import annotations

import os

from .tracefile import Trace

NETCDF3_SIGNATURES = {
    b"CDF\x01": "netCDF-3 classic",
    b"CDF\x02": "netCDF-3 64-bit offset",
    b"CDF\x05": "netCDF-3 64-bit data (CDF-5)",
}
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

UNTRACED = {
    "netCDF-3": "file (not HDF5 or Zarr): read through netCDF-C or scipy, which ioadvisor does not trace; "
                "nothing to advise",
    "HDF5": "file of which h5py read no dataset: it holds none h5py can read, or the program read it through "
            "another HDF5 library (netCDF-C's, as xarray's default netcdf4 engine does), which ioadvisor does "
            "not trace; xarray's engine='h5netcdf' reads it through h5py",
}
"""Format family -> what the tracer's silence about such a file means."""


def file_format(path: str | os.PathLike) -> str | None:
    """"HDF5" or the netCDF-3 variant of a file by its signature; None for anything else or an unreadable path."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    return "HDF5" if head == HDF5_SIGNATURE else NETCDF3_SIGNATURES.get(head[:4])


def netcdf3_format(path: str | os.PathLike) -> str | None:
    """The netCDF-3 variant of a file; None for anything else."""
    fmt = file_format(path)
    return fmt if fmt in NETCDF3_SIGNATURES.values() else None


def untraced_inputs(trace: Trace) -> list[tuple[str, str, str]]:
    """(path, format, what that means) of the netCDF-3 and HDF5 files named on the command line of a traced
    program that reached no dataset at all (with some traced, a named file may simply not be data).

    The trace keeps no working directory: a relative name is looked up from the current one.
    """
    if trace.datasets:
        return []
    out = []
    for arg in trace.header.argv[1:]:
        if os.path.isfile(arg):
            fmt = file_format(arg)
            if fmt is not None:
                out.append((os.path.abspath(arg), fmt, f"{fmt} {UNTRACED[fmt.split()[0]]}"))
    return out


__all__ = ["HDF5_SIGNATURE", "NETCDF3_SIGNATURES", "UNTRACED", "file_format", "netcdf3_format", "untraced_inputs"]
