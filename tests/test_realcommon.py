"""The realistic workloads' helpers (benchmarks/workloads/realcommon.py): the untraced program times its reads of the
advised array around h5py's ``Dataset.__getitem__`` (the span the tracer times) or xarray's netCDF4 call (the call
verify replays), for realsize's recipe against verify."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from benchmarks.workloads import realcommon


def test_h5py_reads_of_the_named_array_are_timed_once_each(tmp_path, monkeypatch):
    monkeypatch.setattr(h5py.Dataset, "__getitem__", h5py.Dataset.__getitem__)  # restored after the test
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("tas", data=np.arange(400, dtype="f4").reshape(20, 20), chunks=(5, 5))
        f.create_dataset("lat", data=np.arange(20.0))
    spans = realcommon._time_h5py_calls("tas")
    with h5py.File(tmp_path / "a.h5", "r") as f:
        got = f["tas"][2:7, 3:9]
        f["lat"][:]  # a coordinate: not the advised array
        f["tas"][0]
    assert got.shape == (5, 6) and got[0, 0] == 43  # what the program reads is unchanged
    assert len(spans) == 2 and all(e >= b for b, e in spans)


def test_overlapping_calls_count_once():
    assert realcommon._union_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]) == pytest.approx(4.0)
    assert realcommon._union_seconds([]) == 0.0


def test_netcdf4_calls_of_the_named_variable_alone_are_timed(tmp_path, monkeypatch):
    """xarray reads the coordinate variables through the same ``_getitem`` when it opens the file; verify replays
    the advised array alone, so the recipe side counts that variable's calls only."""
    import itertools
    import types

    import netCDF4
    import xarray as xr
    from xarray.backends import netCDF4_

    monkeypatch.setattr(netCDF4_.NetCDF4ArrayWrapper, "_getitem", netCDF4_.NetCDF4ArrayWrapper._getitem)
    tick = itertools.count()
    monkeypatch.setattr(realcommon, "time", types.SimpleNamespace(perf_counter=lambda: float(next(tick))))
    with netCDF4.Dataset(tmp_path / "a.nc", "w") as d:
        for name, n in (("time", 6), ("lat", 4), ("lon", 5)):
            d.createDimension(name, n)
            d.createVariable(name, "f8", (name,))[:] = np.arange(n)
        d.createVariable("tas", "f4", ("time", "lat", "lon"))[:] = np.arange(120, dtype="f4").reshape(6, 4, 5)
    total = realcommon._time_netcdf4_calls("tas")
    with xr.open_dataset(tmp_path / "a.nc", engine="netcdf4") as ds:
        got = ds.tas[:, 1, 2].values
    assert got.tolist() == [7.0 + 20 * k for k in range(6)]  # what the program reads is unchanged
    assert total == [1.0]  # one timed call (each takes one tick of the fake clock); the coordinates' are not timed
