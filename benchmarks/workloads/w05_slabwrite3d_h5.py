"""3-D h5py write: a simulation writes one (y, x) plane per time step into a dataset chunked
(16, 100, 100): every write covers only part of each chunk it touches. (64 x 512 x 512) float32."""
import os

import h5py
from common import main, scaled, smooth_field

NT = scaled(64, 16)
SHAPE = (NT, 512, 512)


def run(d):
    field = smooth_field((1, 512, 512), 5)[0]
    with h5py.File(os.path.join(d, "sim.h5"), "w") as f:
        ds = f.create_dataset("u", shape=SHAPE, dtype="f4", chunks=(16, 100, 100))
        for t in range(NT):
            ds[t] = field + t


if __name__ == "__main__":
    main(None, run)
