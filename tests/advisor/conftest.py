"""Fixtures of the apply tests: a small netCDF-4 file (coordinates, attributes, NaN and fill values) and a
trace of a program reading it."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

IOADVISOR = Path(sys.executable).parent / "ioadvisor"


def write_netcdf(path: Path, nt: int = 24, ny: int = 18, nx: int = 36, nan: bool = True) -> np.ndarray:
    import xarray as xr

    rng = np.random.default_rng(0)
    y = np.linspace(0, np.pi, ny)[None, :, None]
    x = np.linspace(0, 2 * np.pi, nx)[None, None, :]
    t = np.arange(nt)[:, None, None]
    v = (280 + 10 * np.sin(y) * np.cos(x + 0.1 * t) + rng.standard_normal((nt, ny, nx)) * 0.1).astype("f4")
    if nan:
        v[:, :2, :3] = np.nan
    ds = xr.Dataset(
        {"tas": (("time", "lat", "lon"), v, {"units": "K", "long_name": "air temperature"})},
        coords={"time": ("time", np.arange(nt, dtype="f8"), {"units": "days since 2000-01-01"}),
                "lat": ("lat", np.linspace(-85, 85, ny), {"units": "degrees_north"}),
                "lon": ("lon", np.linspace(0, 350, nx), {"units": "degrees_east"})},
        attrs={"title": "apply test", "history": "tests/advisor/conftest.py"})
    ds.to_netcdf(path, engine="netcdf4", encoding={"tas": {"chunksizes": (1, ny, nx), "zlib": True}})
    return v


def trace_program(path: Path, trace: Path, array: str = "tas") -> None:
    """Trace a program reading small boxes of ``array`` (h5py, or zarr for a .zarr store)."""
    code = (
        "import sys, advisor\n"
        "with advisor.trace(sys.argv[2], overwrite=True):\n"
        "    if sys.argv[1].endswith('.zarr'):\n"
        "        import zarr; a = zarr.open_group(sys.argv[1], mode='r')[sys.argv[3]]\n"
        "    else:\n"
        "        import h5py; a = h5py.File(sys.argv[1], 'r')[sys.argv[3]]\n"
        "    for i in range(0, a.shape[1], 4):\n"
        "        a[:, i:i + 4, 0:8]\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(trace), array], check=True)


@pytest.fixture
def netcdf_case(tmp_path):
    """(source .nc, its trace, the tas values)."""
    src = tmp_path / "src.nc"
    values = write_netcdf(src)
    trace = tmp_path / "t.jsonl"
    trace_program(src, trace)
    return src, trace, values


def apply_cli(*args, timeout=300):
    return subprocess.run([str(IOADVISOR), "apply", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
