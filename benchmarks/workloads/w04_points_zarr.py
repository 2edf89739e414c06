"""2-D zarr read: random single rows (sample lookup) from a table stored in big chunks.
(500000 x 32) float32 in (131072 x 32) chunks, 80 row reads."""
import os

import numpy as np
import zarr
from common import main, scaled, smooth_field

ROWS, COLS = scaled(500_000, 1000), 32


def prepare(d):
    z = zarr.create_array(os.path.join(d, "table.zarr"), shape=(ROWS, COLS), dtype="f4", chunks=(131072, 32))
    z[:] = smooth_field((ROWS, COLS), 4)


def run(d):
    z = zarr.open_array(os.path.join(d, "table.zarr"), mode="r")
    rng = np.random.default_rng(4)
    print(sum(float(z[int(r)].sum()) for r in rng.integers(0, ROWS, 80)))


if __name__ == "__main__":
    main(prepare, run)
