"""2-D zarr write: a post-processor writes an output table column block by column block (8 columns at a
time) into a (200000 x 64) float32 array chunked by rows, so each write touches part of every chunk."""
import os

import zarr
from common import main, scaled, smooth_field

ROWS, COLS = scaled(200_000, 1000), 64


def run(d):
    z = zarr.create_array(os.path.join(d, "out.zarr"), shape=(ROWS, COLS), dtype="f4", chunks=(5000, 64))
    data = smooth_field((ROWS, 8), 10)
    for c in range(0, COLS, 8):
        z[:, c:c + 8] = data + c


if __name__ == "__main__":
    main(None, run)
