"""dask.array over an h5py dataset: column means of a (1M x 64) float32 table in (65536, 64) dask blocks,
threaded scheduler, from a file stored in (4096, 8) chunks."""
import os

import dask.array as da
import h5py
from common import main, scaled, smooth_field

ROWS, COLS = scaled(1_000_000, 65536), 64


def prepare(d):
    with h5py.File(os.path.join(d, "table.h5"), "w") as f:
        f.create_dataset("x", data=smooth_field((ROWS, COLS), 14), chunks=(4096, 8))


def run(d):
    with h5py.File(os.path.join(d, "table.h5"), "r") as f:
        x = da.from_array(f["x"], chunks=(65536, 64))
        print(float(x.mean(axis=0).compute(scheduler="threads").sum()))


if __name__ == "__main__":
    main(prepare, run)
