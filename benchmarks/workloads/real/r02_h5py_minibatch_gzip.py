"""h5py mini-batches from gzip'd features: 3000 batches of 64 consecutive rows at random offsets of a
(2_000_000, 128) float32 dataset stored in (1000, 128) gzip chunks (1 GB), one process."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, open_array, scaled, smooth_slabs  # noqa: E402

N, F = scaled(2_000_000, 1000), 128


def prepare(d):
    import h5py

    with h5py.File(os.path.join(d, "features.h5"), "w") as f:
        ds = f.create_dataset("x", shape=(N, F), dtype="f4", chunks=(1000, F), compression="gzip")
        for lo, hi, slab in smooth_slabs((N, F), 21):
            ds[lo:hi] = slab


def run(d):
    rng = np.random.default_rng(3)
    with open_array(os.path.join(d, "features.h5"), "x", d, "hdf5") as x:
        total = 0.0
        for start in rng.integers(0, N - 64, 3000):
            total += float(x[int(start):int(start) + 64].sum())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
