"""iomodel.replay with ``LayoutSpec.stack`` "netcdf4": built by netCDF-C, read through netCDF4-python."""
import netCDF4
import numpy as np
import pytest

from instrumentation.records import AccessRecord, Filter, Selection
from iomodel.replay import LayoutSpec, ReplayError, build, replay
from iomodel.replay_netcdf4 import netcdf4_filter_kwargs


def _read(start, count):
    sel = Selection.box(start, count)
    return AccessRecord(0, "read", sel, sel.nelements, 4 * sel.nelements, 0.0, 0.0)


def test_replay_through_netcdf4_reads_the_data_from_a_netcdf_file(tmp_path):
    data = np.random.default_rng(0).standard_normal((120, 30)).astype("f4")
    spec = LayoutSpec("hdf5", (120, 30), "<f4", (20, 10), rdcc=(2 << 20, 521, 0.5), stack="netcdf4",
                      filters=(Filter("shuffle"), Filter("gzip", 1, {"level": 2})))
    reads = [_read((0, 0), (20, 30)), _read((45, 7), (10, 3))]
    res = replay(reads, spec, tmp_path, data=data, keep_values=True)
    assert len(res.per_access) == 2 and res.total_seconds > 0
    assert np.array_equal(res.values[0], data[:20]) and np.array_equal(res.values[1], data[45:55, 7:10])
    with netCDF4.Dataset(tmp_path / "array.h5") as nc:
        v = nc["data"]
        assert v.chunking() == [20, 10] and v.filters()["zlib"] and v.filters()["complevel"] == 2
        assert v.filters()["shuffle"]


def test_contiguous_and_unwritable_filters(tmp_path):
    spec = LayoutSpec("hdf5", (50, 4), "<f8", None, stack="netcdf4")
    build(spec, tmp_path)
    with netCDF4.Dataset(tmp_path / "array.h5") as nc:
        assert nc["data"].chunking() == "contiguous"
    assert netcdf4_filter_kwargs([Filter("sz3")]) is None
    with pytest.raises(ReplayError, match="filters"):
        build(LayoutSpec("hdf5", (50, 4), "<f8", (10, 4), filters=(Filter("sz3"),), stack="netcdf4"), tmp_path)


def test_an_unlimited_dimension_stays_unlimited(tmp_path):
    data = np.arange(40 * 6, dtype="f8").reshape(40, 6)
    build(LayoutSpec("hdf5", (40, 6), "<f8", (8, 6), maxshape=(None, 6), stack="netcdf4"), tmp_path, data=data)
    with netCDF4.Dataset(tmp_path / "array.h5") as nc:
        assert nc.dimensions["dim_0"].isunlimited() and not nc.dimensions["dim_1"].isunlimited()
        assert nc["data"].shape == (40, 6) and np.array_equal(nc["data"][...], data)
