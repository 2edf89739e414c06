"""xarray (default engine, netCDF4-python) point time series from a map-chunked netCDF-4 file: 40 time series
``ds.tas[:, i, j].values`` at random points of a (NT, 180, 360) float32 variable stored one time step per chunk.
(5840, 180, 360): 1.5 GB."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, open_xarray, scaled, smooth_slabs, write_netcdf  # noqa: E402

NT, NY, NX = scaled(5840, 8), 180, 360


def prepare(d):
    write_netcdf(os.path.join(d, "tas.nc"), "tas", (NT, NY, NX), (1, NY, NX), smooth_slabs((NT, NY, NX), 11))


def run(d):
    rng = np.random.default_rng(5)
    with open_xarray(os.path.join(d, "tas.nc"), d) as ds:
        total = 0.0
        for i, j in zip(rng.integers(0, NY, 40), rng.integers(0, NX, 40)):
            total += float(ds.tas[:, int(i), int(j)].values.sum())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
