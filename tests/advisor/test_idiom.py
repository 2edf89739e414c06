"""netCDF-4 files (xarray + h5netcdf) and xarray-written Zarr stores: recognized, advised in xarray's terms,
and dask-block reads recognized as the program's blocking."""
import numpy as np
import pytest

import advisor
from advisor.idiom import dask_chunks, detect, xarray_code
from instrumentation.tracefile import load_trace

from test_search import profile

xr = pytest.importorskip("xarray")
pytest.importorskip("dask")


def _dataset():
    return xr.Dataset({"tas": (("time", "lat", "lon"), np.random.default_rng(0).random((60, 36, 72), "f4"))},
                      coords={"time": np.arange(60.0), "lat": np.linspace(-87.5, 87.5, 36),
                              "lon": np.linspace(2.5, 357.5, 72)})


@pytest.mark.parametrize("engine", ["h5netcdf", "zarr"])
def test_xarray_files_advised_in_xarray_terms(tmp_path, engine):
    path = tmp_path / ("tas.nc" if engine == "h5netcdf" else "tas.zarr")
    if engine == "h5netcdf":
        _dataset().to_netcdf(path, engine="h5netcdf", encoding={"tas": {"chunksizes": (1, 36, 72)}})
    else:
        _dataset().to_zarr(path, encoding={"tas": {"chunks": (1, 36, 72)}}, zarr_format=3, consolidated=False)
    with advisor.trace(tmp_path / "t.jsonl"):
        kw = {"consolidated": False} if engine == "zarr" else {}
        with xr.open_dataset(path, engine=engine, chunks={"time": 12}, **kw) as ds:
            ds.tas.mean(("lat", "lon")).compute(scheduler="synchronous")
    trace = load_trace(tmp_path / "t.jsonl")
    tas = next(d for d in trace.datasets.values() if d.path.strip("/") == "tas")
    idiom = detect(tas)
    assert idiom is not None and idiom.variable == "tas" and idiom.dims == ("time", "lat", "lon")
    assert idiom.kind == ("netcdf4" if engine == "h5netcdf" else "xarray-zarr")
    adv = advisor.advise(trace, profile=profile(), lossless_only=True)
    # the coordinates are read once each; the first read of the file (a coordinate) can take longest on a
    # loaded machine, so which of them are summed up is not fixed here (test_advice checks the summing up)
    d = next(x for x in adv.datasets if x.path.strip("/") == "tas")
    assert {m.name.split("::")[1].strip("/") for m in adv.minor} <= {"time", "lat", "lon"}
    assert d.blocking == (12, 36, 72)
    code = d.xarray_code()
    c = d.recommendation.candidate
    if c.library == "hdf5":
        assert f"engine=\"h5netcdf\", encoding={{'tas': {{'chunksizes': {tuple(c.chunks)!r}}}}}" in code
    else:
        assert f"'chunks': {tuple(c.chunks)!r}" in code and "to_zarr" in code
    assert f"chunks={dict(zip(('time', 'lat', 'lon'), dask_chunks(c.chunks, d.shape, d.blocking)))!r}" in code
    assert "In xarray" in str(adv)


def test_plain_files_have_no_idiom(tmp_path):
    import h5py

    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=np.zeros((10, 10), "f4"))
    with advisor.trace(tmp_path / "t.jsonl"):
        with h5py.File(tmp_path / "f.h5", "r") as f:
            f["x"][0]
    assert detect(load_trace(tmp_path / "t.jsonl").accessed()[0]) is None


def test_dask_chunks_hold_whole_storage_chunks():
    assert dask_chunks((30, 40, 30), (360, 180, 360), (30, 40, 60)) == (30, 40, 60)
    assert dask_chunks((16, 40, 40), (360, 180, 360), (30, 40, 60)) == (32, 40, 80)
    assert dask_chunks((16, 40, 40), (360, 180, 360), None) == (16, 40, 40)
    text = xarray_code(detect_stub(), "zarr", (8, 8), (64, 64), (128, 128), None, False)
    assert "'shards': (64, 64)" in text


def detect_stub():
    from advisor.idiom import Idiom

    return Idiom("xarray-zarr", "v", ("y", "x"))
