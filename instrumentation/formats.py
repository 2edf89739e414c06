"""Recognise input files the tracer cannot see into: netCDF-3 (classic, 64-bit offset, CDF-5).

xarray and netCDF4 read netCDF-3 through netCDF-C or scipy, not HDF5, so a
trace of such a program holds no dataset. The files named on the traced
command line are sniffed by their signature, so ``trace show`` and ``advise``
can say what was read instead of only "no accesses recorded".
"""
from __future__ import annotations

import os

from .tracefile import Trace

NETCDF3_SIGNATURES = {
    b"CDF\x01": "netCDF-3 classic",
    b"CDF\x02": "netCDF-3 64-bit offset",
    b"CDF\x05": "netCDF-3 64-bit data (CDF-5)",
}


def netcdf3_format(path: str | os.PathLike) -> str | None:
    """The netCDF-3 variant of a file by its first 4 bytes; None for anything else or an unreadable path."""
    try:
        with open(path, "rb") as fh:
            return NETCDF3_SIGNATURES.get(fh.read(4))
    except OSError:
        return None


def foreign_inputs(trace: Trace) -> list[tuple[str, str]]:
    """(path, format) of the netCDF-3 files named on the traced program's command line.

    The trace keeps no working directory: a relative name is looked up from the current one.
    """
    out = []
    for arg in trace.header.argv[1:]:
        if os.path.isfile(arg):
            fmt = netcdf3_format(arg)
            if fmt is not None:
                out.append((os.path.abspath(arg), fmt))
    return out


__all__ = ["NETCDF3_SIGNATURES", "foreign_inputs", "netcdf3_format"]
