"""2-D zarr append: a logger appends 500-row blocks to a growing (N x 128) float32 array in (1000 x 128)
chunks, so every other append rewrites a half-filled chunk. 200 appends (100000 rows)."""
import os

import zarr
from common import main, scaled, smooth_field

COLS, BLOCK = 128, 500
N_APPENDS = scaled(200, 10)


def run(d):
    z = zarr.create_array(os.path.join(d, "log.zarr"), shape=(0, COLS), dtype="f4", chunks=(1000, COLS))
    block = smooth_field((BLOCK, COLS), 6)
    for i in range(N_APPENDS):
        z.append(block + i)


if __name__ == "__main__":
    main(None, run)
