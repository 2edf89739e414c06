"""xarray over h5netcdf with dask chunks: a regional mean time series of a (time, lat, lon) netCDF-4 variable
stored one time step per chunk (a common netCDF export), read in 30-step dask blocks. (730 x 180 x 360)
float32 plus its coordinate variables."""
import os

import numpy as np
import xarray as xr
from common import main, scaled, smooth_field

NT, NY, NX = scaled(730, 30), 180, 360


def dataset():
    return xr.Dataset(
        {"tas": (("time", "lat", "lon"), smooth_field((NT, NY, NX), 11))},
        coords={"time": np.arange(NT, dtype="f8"), "lat": np.linspace(-89.5, 89.5, NY),
                "lon": np.linspace(0.5, 359.5, NX)})


def prepare(d):
    dataset().to_netcdf(os.path.join(d, "tas.nc"), engine="h5netcdf",
                        encoding={"tas": {"chunksizes": (1, NY, NX)}})


def run(d):
    with xr.open_dataset(os.path.join(d, "tas.nc"), engine="h5netcdf", chunks={"time": 30}) as ds:
        box = ds.tas.isel(lat=slice(60, 100), lon=slice(100, 160))
        print(float(box.mean(("lat", "lon")).compute(scheduler="synchronous").sum()))


if __name__ == "__main__":
    main(prepare, run)
