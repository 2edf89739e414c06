"""3-D h5py append: a camera appends (64 x 64) float32 frames one at a time to an unlimited dataset
with h5py's automatic chunks (resize + write per frame). 4000 frames."""
import os

import h5py
from common import main, scaled, smooth_field

N_FRAMES = scaled(4000, 100)


def run(d):
    frame = smooth_field((64, 64), 7)
    with h5py.File(os.path.join(d, "frames.h5"), "w") as f:
        ds = f.create_dataset("frames", shape=(0, 64, 64), maxshape=(None, 64, 64), dtype="f4", chunks=True)
        for i in range(N_FRAMES):
            ds.resize(i + 1, axis=0)
            ds[i] = frame + i


if __name__ == "__main__":
    main(None, run)
