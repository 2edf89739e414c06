"""A PyTorch Dataset over h5py: one ds[i] read per sample (features and label), shuffled mini-batches of 64
through torch's DataLoader (num_workers=0), from a file written with large row chunks. (200000 x 64)
float32 features, (200000,) int64 labels, 20000 samples."""
import os

import h5py
import numpy as np
import torch
from common import main, scaled, smooth_field

ROWS, COLS = scaled(200_000, 4096), 64
SAMPLES = scaled(20_000, 64)


class Samples(torch.utils.data.Dataset):
    def __init__(self, path):
        self.f = h5py.File(path, "r")
        self.x, self.y = self.f["x"], self.f["y"]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


def prepare(d):
    with h5py.File(os.path.join(d, "train.h5"), "w") as f:
        f.create_dataset("x", data=smooth_field((ROWS, COLS), 13), chunks=(4096, 64))
        # a scaled-down run (WORKLOAD_SCALE) may have fewer labels than one full-size chunk holds
        f.create_dataset("y", data=np.arange(ROWS, dtype="i8") % 10, chunks=(min(65536, ROWS),))


def run(d):
    data = Samples(os.path.join(d, "train.h5"))
    sampler = torch.utils.data.RandomSampler(data, num_samples=SAMPLES, generator=torch.Generator().manual_seed(0))
    total = 0.0
    for xb, yb in torch.utils.data.DataLoader(data, batch_size=64, sampler=sampler, num_workers=0):
        total += float(xb.sum()) + float(yb.sum())
    print(total)


if __name__ == "__main__":
    main(prepare, run)
