"""A feature table read in mini-batches: the workload ``ioadvisor demo`` traces.

A (200000 x 32) float32 table is written in column chunks (the layout of a
column-oriented export), then read the way a training loop reads it: random
blocks of consecutive rows, plus now and then a whole column for statistics.
Plain h5py code; run it directly with ``python -m advisor.workloads.demo_rows DIR``.
"""
from __future__ import annotations

import os
import sys

import h5py
import numpy as np

ROWS, COLS = 200_000, 32
CHUNKS = (25_000, 1)
"""Column chunks: each row block touches every column's chunk (the poor choice the advisor should fix)."""
BATCH = 1_000
N_BATCHES = 200
STATS_EVERY = 50


def main(directory: str, seed: int = 0) -> float:
    """Write the table under ``directory``, run the read loop, return a checksum of what was read."""
    rng = np.random.default_rng(seed)
    path = os.path.join(directory, "features.h5")
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("features", shape=(ROWS, COLS), dtype="f4", chunks=CHUNKS)
        for start in range(0, ROWS, 20_000):
            ds[start:start + 20_000] = rng.standard_normal((20_000, COLS), dtype=np.float32)
    total = 0.0
    with h5py.File(path, "r") as f:
        ds = f["features"]
        for i in range(N_BATCHES):
            start = int(rng.integers(0, ROWS - BATCH))
            total += float(ds[start:start + BATCH].sum())
            if i % STATS_EVERY == 0:
                total += float(ds[:, int(rng.integers(0, COLS))].mean())
    return total


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "."))
