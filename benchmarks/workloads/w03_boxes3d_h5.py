"""3-D h5py read: random 32^3 sub-volumes (feature extraction) of a volume stored plane by plane.
(256 x 256 x 256) float32, 100 boxes."""
import os

import h5py
import numpy as np
from common import main, scaled, smooth_field

N0 = scaled(256, 32)
SHAPE = (N0, 256, 256)


def prepare(d):
    with h5py.File(os.path.join(d, "volume.h5"), "w") as f:
        f.create_dataset("v", data=smooth_field(SHAPE, 3), chunks=(1, 256, 256))


def run(d):
    rng = np.random.default_rng(3)
    with h5py.File(os.path.join(d, "volume.h5"), "r") as f:
        v = f["v"]
        total = 0.0
        for _ in range(100):
            i, j, k = (int(rng.integers(0, n - 32)) for n in SHAPE)
            total += float(v[i:i + 32, j:j + 32, k:k + 32].mean())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
