"""2-D zarr read: whole columns (per-variable statistics) of a table stored in row chunks.
(250000 x 64) float32, 8 column reads."""
import os

import numpy as np
import zarr
from common import main, scaled, smooth_field

ROWS, COLS = scaled(250_000, 1000), 64


def prepare(d):
    z = zarr.create_array(os.path.join(d, "table.zarr"), shape=(ROWS, COLS), dtype="f4", chunks=(2000, 64))
    z[:] = smooth_field((ROWS, COLS), 2)


def run(d):
    z = zarr.open_array(os.path.join(d, "table.zarr"), mode="r")
    rng = np.random.default_rng(2)
    print(sum(float(z[:, int(c)].mean()) for c in rng.choice(COLS, 8, replace=False)))


if __name__ == "__main__":
    main(prepare, run)
