"""3-D zarr read: full time series at random grid points (a climate analysis) of model output stored one
time step per chunk. (512 x 128 x 256) float32, 8 point series."""
import os

import numpy as np
import zarr
from common import main, scaled, smooth_field

NT = scaled(512, 16)
SHAPE = (NT, 128, 256)


def prepare(d):
    z = zarr.create_array(os.path.join(d, "model.zarr"), shape=SHAPE, dtype="f4", chunks=(1, 128, 256))
    z[:] = smooth_field(SHAPE, 9)


def run(d):
    z = zarr.open_array(os.path.join(d, "model.zarr"), mode="r")
    rng = np.random.default_rng(9)
    print(sum(float(z[:, int(rng.integers(0, 128)), int(rng.integers(0, 256))].mean()) for _ in range(8)))


if __name__ == "__main__":
    main(prepare, run)
