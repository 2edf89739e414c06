"""xarray over zarr with dask chunks: per-grid-point time statistics of a (time, lat, lon) variable stored
in (1, lat, lon) chunks, read in dask blocks of 73 steps x a quarter of the grid. (730 x 180 x 360) float32."""
import os

import numpy as np
import xarray as xr
from common import main, scaled, smooth_field

NT, NY, NX = scaled(730, 73), 180, 360


def prepare(d):
    ds = xr.Dataset(
        {"tas": (("time", "lat", "lon"), smooth_field((NT, NY, NX), 12))},
        coords={"time": np.arange(NT, dtype="f8"), "lat": np.linspace(-89.5, 89.5, NY),
                "lon": np.linspace(0.5, 359.5, NX)})
    ds.to_zarr(os.path.join(d, "tas.zarr"), encoding={"tas": {"chunks": (1, NY, NX)}}, mode="w",
               zarr_format=3, consolidated=False)


def run(d):
    with xr.open_dataset(os.path.join(d, "tas.zarr"), engine="zarr", chunks={"time": 73, "lat": 90, "lon": 180},
                         consolidated=False) as ds:
        print(float(ds.tas.std("time").compute(scheduler="synchronous").sum()))


if __name__ == "__main__":
    main(prepare, run)
