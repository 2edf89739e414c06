"""``ioadvisor apply`` on the shapes a file's tree can take: a Zarr store whose root is an array (no group),
an HDF5 file with its datasets at the root, a netCDF-4 file with nested groups."""
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.advisor.conftest import apply_cli, trace_program

READ_ROOT_ARRAY = (
    "import sys, advisor, zarr\n"
    "with advisor.trace(sys.argv[2], overwrite=True):\n"
    "    a = zarr.open_array(sys.argv[1], mode='r')\n"
    "    for j in range(0, a.shape[1], 7):\n"
    "        a[:, j]\n"
)


@pytest.fixture(params=[3, 2], ids=["zarr3", "zarr2"])
def root_array_store(request, tmp_path):
    """(a Zarr store whose root is an array, its values, a trace of a program reading its columns)."""
    import zarr

    src = tmp_path / "image.zarr"
    values = np.random.default_rng(1).standard_normal((64, 96)).astype("f4")
    z = zarr.create_array(str(src), shape=values.shape, dtype="f4", chunks=(16, 16), zarr_format=request.param,
                          attributes={"units": "K"})
    z[...] = values
    trace = tmp_path / "t.jsonl"
    subprocess.run([sys.executable, "-c", READ_ROOT_ARRAY, str(src), str(trace)], check=True)
    return src, values, trace


def test_root_array_store_is_copied_as_a_root_array(root_array_store, tmp_path):
    import zarr

    src, values, trace = root_array_store
    dest = tmp_path / "cols.zarr"
    r = apply_cli(trace, "--out", dest, "--layout", "zarr:chunks=64x8,codec=zstd", "--json")
    assert r.returncode == 0, r.stderr
    assert [a["path"] for a in json.loads(r.stdout)["arrays"]] == ["/"]
    out = zarr.open(str(dest), mode="r")
    assert isinstance(out, zarr.Array) and out.chunks == (64, 8)
    assert np.array_equal(out[...], values) and out.attrs["units"] == "K"
    assert zarr.open(str(src), mode="r").chunks == (16, 16)  # the source as it was
    assert not (tmp_path / "cols.zarr.ioadvisor-partial").exists()


def test_root_array_without_layout_applies_the_advice(root_array_store, tmp_path):
    import zarr

    src, values, trace = root_array_store
    dest = tmp_path / "advised.zarr"
    r = apply_cli(trace, "--out", dest)
    assert r.returncode == 0, r.stderr
    assert np.array_equal(zarr.open_array(str(dest), mode="r")[...], values)


def test_root_array_into_hdf5_is_one_line_naming_the_root(root_array_store, tmp_path):
    src, _, trace = root_array_store
    r = apply_cli(trace, "--out", tmp_path / "x.h5", "--layout", "hdf5:chunks=64x8")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "root is an array" in r.stderr, r.stderr
    assert not (tmp_path / "x.h5").exists()
    # a layout of the other library than --out names the array by its file, not by an empty path
    r = apply_cli(trace, "--out", tmp_path / "x.zarr", "--layout", "hdf5:chunks=64x8")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"{src}:/: the layout is hdf5" in r.stderr and ": : " not in r.stderr, r.stderr


def _root_datasets_file(path):
    import h5py

    rng = np.random.default_rng(2)
    with h5py.File(path, "w") as f:
        f.attrs["origin"] = "test"
        f.create_dataset("x", data=rng.standard_normal((40, 30, 8)), chunks=(40, 1, 8), compression="gzip")
        f.create_dataset("ids", data=np.arange(40, dtype="i8"))
        f["x"].attrs["scale"] = 2.5
    return path


@pytest.mark.parametrize("dest_name", ["out.h5", "out.zarr"])
def test_hdf5_datasets_at_root(tmp_path, dest_name):
    import h5py
    import zarr

    src = _root_datasets_file(tmp_path / "plain.h5")
    trace = tmp_path / "t.jsonl"
    trace_program(src, trace, "x")
    dest = tmp_path / dest_name
    lib = "zarr" if dest_name.endswith(".zarr") else "hdf5"
    r = apply_cli(trace, "--out", dest, "--dataset", "x", "--layout", f"{lib}:chunks=8x30x8")
    assert r.returncode == 0, r.stderr
    with h5py.File(src, "r") as f:
        want = {k: f[k][...] for k in f}
    out = zarr.open_group(str(dest), mode="r") if lib == "zarr" else h5py.File(dest, "r")
    try:
        assert sorted(out.keys()) == sorted(want) and tuple(out["x"].chunks) == (8, 30, 8)
        assert all(np.array_equal(out[k][...], v) for k, v in want.items())
        assert out.attrs["origin"] == "test" and out["x"].attrs["scale"] == 2.5
    finally:
        out.close() if hasattr(out, "close") else None


def _nested_netcdf(path):
    netCDF4 = pytest.importorskip("netCDF4")
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(path, "w") as nc:
        nc.title = "nested"
        nc.createDimension("time", 12)
        nc.createDimension("lat", 10)
        nc.createVariable("time", "f8", ("time",))[:] = np.arange(12.0)
        nc.createVariable("lat", "f8", ("lat",))[:] = np.linspace(-45, 45, 10)
        g = nc.createGroup("ocean")
        g.source = "model"
        g.createDimension("depth", 5)
        g.createVariable("depth", "f4", ("depth",))[:] = np.arange(5.0)
        v = g.createVariable("temp", "f4", ("time", "depth", "lat"), chunksizes=(1, 5, 10), zlib=True)
        v.units = "degC"
        v[:] = rng.standard_normal((12, 5, 10)).astype("f4")
        sub = g.createGroup("deep")
        sub.createVariable("salt", "f4", ("time", "lat"))[:] = rng.standard_normal((12, 10)).astype("f4")
    return path


@pytest.mark.parametrize("dest_name", ["out.nc", "out.zarr"])
def test_netcdf_groups_keep_xarray_view(tmp_path, dest_name):
    xr = pytest.importorskip("xarray")
    src = _nested_netcdf(tmp_path / "nested.nc")
    trace = tmp_path / "t.jsonl"
    trace_program(src, trace, "ocean/temp")
    dest = tmp_path / dest_name
    lib = "zarr" if dest_name.endswith(".zarr") else "hdf5"
    r = apply_cli(trace, "--out", dest, "--dataset", "ocean/temp", "--layout", f"{lib}:chunks=12x1x10")
    assert r.returncode == 0, r.stderr
    engine = "zarr" if lib == "zarr" else "netcdf4"
    for group in (None, "ocean", "ocean/deep"):
        with xr.open_dataset(src, group=group) as a, xr.open_dataset(dest, group=group, engine=engine) as b:
            xr.testing.assert_identical(a, b)
