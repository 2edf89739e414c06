"""A dask climatology: xarray over h5netcdf with dask chunks of 365 steps, the mean over time of a 40x60 region
of a (5840, 180, 360) float32 netCDF-4 variable stored one time step per chunk (1.5 GB)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, open_xarray, scaled, settings, smooth_slabs, write_netcdf  # noqa: E402

NT, NY, NX = scaled(5840, 365), 180, 360


def prepare(d):
    write_netcdf(os.path.join(d, "tas.nc"), "tas", (NT, NY, NX), (1, NY, NX), smooth_slabs((NT, NY, NX), 41))
    import json

    json.dump({"engine": "h5netcdf", "chunks": {"time": 365}}, open(os.path.join(d, "open.json"), "w"))


def run(d):
    with open_xarray(os.path.join(d, "tas.nc"), d) as ds:
        box = ds.tas.isel(lat=slice(60, 100), lon=slice(100, 160))
        print(float(box.mean("time").compute(scheduler="synchronous").sum()))


if __name__ == "__main__":
    main(prepare, run)
