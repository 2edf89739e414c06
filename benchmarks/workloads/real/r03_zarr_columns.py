"""zarr column reads: 24 whole columns of a (16384, 16384) float32 image (1 GB) stored as zarr 3 with (256, 256)
chunks and zarr's default zstd."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, open_array, scaled, smooth_slabs  # noqa: E402

N = scaled(16384, 256)
M = 16384


def prepare(d):
    import zarr

    z = zarr.create_array(os.path.join(d, "image.zarr"), shape=(N, M), dtype="f4", chunks=(256, 256))
    for lo, hi, slab in smooth_slabs((N, M), 31, rows=1024):
        z[lo:hi] = slab


def run(d):
    rng = np.random.default_rng(4)
    with open_array(os.path.join(d, "image.zarr"), "", d, "zarr") as z:
        total = 0.0
        for j in rng.integers(0, M, 24):
            total += float(z[:, int(j)].sum())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
