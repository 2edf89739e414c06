"""PyTorch minibatches from gzip'd features through a DataLoader with workers: a map-style Dataset over h5py (one
``x[i]`` and one ``y[i]`` read per sample; the file opened in each worker at its first sample, as h5py needs),
``DataLoader(num_workers=2, batch_size=64, shuffle=True)`` with a seeded generator, the first BATCHES batches of an
epoch (a training run's step limit) of a (2_000_000, 128) float32 features dataset stored in (1000, 128) gzip chunks
(1 GB), int64 labels beside it (contiguous)."""
import json
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, open_for_process, scaled, settings, smooth_slabs  # noqa: E402

N, F = scaled(2_000_000, 1000), 128
BATCHES = 120


class Features(torch.utils.data.Dataset):
    """One sample per call: its feature row and its label, read through h5py in the worker that asks."""

    def __init__(self, d):
        self.d, self.x, self.y = d, None, None
        self.labels = settings(d).get("labels", os.path.join(d, "features.h5"))
        with h5py.File(self.labels, "r") as f:
            self.n = len(f["y"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.x is None:  # in the worker: an h5py file opened before the fork must not be used after it
            self.x = open_for_process(os.path.join(self.d, "features.h5"), "x", self.d, "hdf5")
            self.y = h5py.File(self.labels, "r")["y"]
        return torch.from_numpy(np.asarray(self.x[i])), int(self.y[i])


def prepare(d):
    path = os.path.join(d, "features.h5")
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(N, F), dtype="f4", chunks=(1000, F), compression="gzip")
        for lo, hi, slab in smooth_slabs((N, F), 61):
            ds[lo:hi] = slab
        f.create_dataset("y", data=np.arange(N, dtype="i8") * 7 % 10)
    # the labels stay in this file when the benchmark rewrites the features elsewhere (open.json is carried over)
    json.dump({"labels": os.path.abspath(path)}, open(os.path.join(d, "open.json"), "w"))


def run(d):
    loader = torch.utils.data.DataLoader(Features(d), batch_size=64, shuffle=True, num_workers=2,
                                         generator=torch.Generator().manual_seed(6))
    total = 0.0
    for step, (xb, yb) in enumerate(loader):
        total += float(xb.sum()) + float(yb.sum())
        if step + 1 == BATCHES:
            break
    print(total)


if __name__ == "__main__":
    main(prepare, run)
