"""2-D h5py read: random blocks of consecutive rows (a training loop's mini-batches) from a file stored in
column chunks. (1M x 16) float32, 300 batches of 512 rows."""
import os

import h5py
import numpy as np
from common import main, scaled, smooth_field

ROWS, COLS = scaled(1_000_000, 1000), 16


def prepare(d):
    with h5py.File(os.path.join(d, "table.h5"), "w") as f:
        f.create_dataset("x", data=smooth_field((ROWS, COLS), 1), chunks=(65536, 1))


def run(d):
    rng = np.random.default_rng(1)
    with h5py.File(os.path.join(d, "table.h5"), "r") as f:
        ds = f["x"]
        total = 0.0
        for _ in range(300):
            start = int(rng.integers(0, ROWS - 512))
            total += float(ds[start:start + 512].sum())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
